#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Writes the D-Bus messages that src/daemon/test-dbus-message-real.c checks as made by other
# implementations than sd-bus (which the test drives itself): GDBus (GLib's
# Gio.DBusMessage.to_blob(), both byte orders) and dbus-daemon (libdbus: its replies to Hello, and a
# GDBus call with fds as the bus forwards it, with SENDER and UNIX_FDS of its own). A name's "-fdsN"
# is how many fds came with it.
#
#   /usr/bin/python3 tests/data/dbus-message/generate.py   (needs python3-gi and dbus-daemon)
#
# Run again only to refresh them; the test reads the .bin files committed beside this script.
import array, os, socket, subprocess, sys, tempfile
import gi
gi.require_version("Gio", "2.0")
from gi.repository import Gio, GLib

here = os.path.dirname(os.path.abspath(__file__))
LE, BE = Gio.DBusMessageByteOrder.LITTLE_ENDIAN, Gio.DBusMessageByteOrder.BIG_ENDIAN
CAPS = Gio.DBusCapabilityFlags.UNIX_FD_PASSING


def save(name, blob, n_fds=0):
    path = os.path.join(here, f"{name}{f'-fds{n_fds}' if n_fds else ''}.bin")
    with open(path, "wb") as f:
        f.write(bytes(blob))
    print(f"{os.path.basename(path)}: {len(blob)} bytes")


def with_fds(m, n):
    fl = Gio.UnixFDList.new()
    fd = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    for _ in range(n):
        fl.append(fd)
    os.close(fd)
    m.set_unix_fd_list(fl)


def gdbus():
    for order, tag in ((LE, ""), (BE, "-be")):
        call = Gio.DBusMessage.new_method_call("org.fhash.Hasher1", "/org/fhash/Hasher1",
                                               "org.fhash.Hasher1.Manager", "HashFds")
        call.set_body(GLib.Variant("(ahsa{sv})", ([0, 1], "sha256",
                                                  {"strategy": GLib.Variant("s", "mmap"),
                                                   "max-size": GLib.Variant("t", 1 << 40)})))
        with_fds(call, 2)
        call.set_serial(5)
        call.set_byte_order(order)
        save(f"gdbus-call{tag}", call.to_blob(CAPS), 2)

        ping = Gio.DBusMessage.new_method_call(None, "/", "org.freedesktop.DBus.Peer", "Ping")
        ping.set_flags(Gio.DBusMessageFlags.NO_REPLY_EXPECTED)
        ping.set_serial(6)
        ping.set_byte_order(order)
        save(f"gdbus-ping{tag}", ping.to_blob(CAPS))

        ret = call.new_method_reply()
        ret.set_body(GLib.Variant("(o)", ("/org/fhash/Hasher1/job/7",)))
        ret.set_serial(9)
        ret.set_byte_order(order)
        save(f"gdbus-return{tag}", ret.to_blob(CAPS))

        fdret = call.new_method_reply()
        fdret.set_body(GLib.Variant("(h)", (0,)))
        with_fds(fdret, 1)
        fdret.set_serial(10)
        fdret.set_byte_order(order)
        save(f"gdbus-return-fd{tag}", fdret.to_blob(CAPS), 1)

        err = call.new_method_error_literal("org.fhash.Error.Busy", "fhashd is busy")
        err.set_serial(11)
        err.set_byte_order(order)
        save(f"gdbus-error{tag}", err.to_blob(CAPS))

        sig = Gio.DBusMessage.new_signal("/org/fhash/Hasher1/job/7", "org.fhash.Hasher1.Job", "FilesHashed")
        sig.set_body(GLib.Variant("(a(usay)b)", ([(0, "sha256", b"\x01\x02"), (1, "héllo ✓ 😀", b"")], True)))
        sig.set_serial(12)
        sig.set_byte_order(order)
        save(f"gdbus-signal{tag}", sig.to_blob(CAPS))


def read_message(s, buf, fds):
    """The next whole message from the raw socket s (buf: bytes read and not framed yet)."""
    while True:
        if len(buf) >= 16:
            need = Gio.DBusMessage.bytes_needed(bytes(buf[:16]))
            if len(buf) >= need:
                m = bytes(buf[:need])
                del buf[:need]
                got = list(fds)
                fds.clear()
                return m, got
        data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(64 * 4))
        if not data:
            raise RuntimeError("dbus-daemon closed the connection")
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a = array.array("i")
                a.frombytes(payload[:len(payload) - len(payload) % 4])
                fds.extend(a)
        buf.extend(data)


def dbus_daemon():
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "bus.conf")
        with open(conf, "w") as f:
            f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path={tmp}/bus</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/></policy>
</busconfig>
""")
        daemon = subprocess.Popen(["dbus-daemon", f"--config-file={conf}", "--nofork", "--print-address"],
                                  stdout=subprocess.PIPE, text=True)
        try:
            address = daemon.stdout.readline().strip()
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(f"{tmp}/bus")
            s.sendall(b"\0AUTH EXTERNAL %s\r\n" % str(os.getuid()).encode().hex().encode())
            assert s.recv(4096).startswith(b"OK ")
            s.sendall(b"NEGOTIATE_UNIX_FD\r\n")
            assert s.recv(4096).startswith(b"AGREE_UNIX_FD")
            s.sendall(b"BEGIN\r\n")
            hello = Gio.DBusMessage.new_method_call("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                    "org.freedesktop.DBus", "Hello")
            hello.set_serial(1)
            s.sendall(bytes(hello.to_blob(CAPS)))
            buf, fds = bytearray(), []
            reply, _ = read_message(s, buf, fds)
            save("dbus-daemon-hello-return", reply)
            unique = Gio.DBusMessage.new_from_blob(reply, CAPS).get_body().unpack()[0]
            acquired, _ = read_message(s, buf, fds)
            save("dbus-daemon-name-acquired", acquired)

            conn = Gio.DBusConnection.new_for_address_sync(
                address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT |
                Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
            call = Gio.DBusMessage.new_method_call(unique, "/org/fhash/Hasher1", "org.fhash.Hasher1.Manager",
                                                   "HashFds")
            call.set_body(GLib.Variant("(ahs)", ([0, 1], "blake3")))
            call.set_flags(Gio.DBusMessageFlags.NO_REPLY_EXPECTED)
            with_fds(call, 2)
            conn.send_message(call, Gio.DBusSendMessageFlags.NONE)
            conn.flush_sync(None)
            forwarded, got = read_message(s, buf, fds)
            for fd in got:
                os.close(fd)
            save("dbus-daemon-forwarded-call", forwarded, len(got))
            conn.close_sync(None)
            s.close()
        finally:
            daemon.terminate()
            daemon.wait()


gdbus()
dbus_daemon()
