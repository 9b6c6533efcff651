#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-daemon-activation.py: fhashd started by D-Bus activation on a private bus connects back to
# the bus that started it (no bus option, $DBUS_STARTER_ADDRESS), hashes, stays while a job runs or
# its owner is connected, and exits once idle for --idle-exit seconds.
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

IDLE = 1  # whole seconds, as IdleExitSec in fhashd.conf


def main():
    ft.require()
    import dbus
    ft.glib_mainloop()
    with ft.Bus() as probe:
        services = os.path.join(probe.dir, "services")
        os.makedirs(services)
        with open(os.path.join(services, "org.fhash.Hasher1.service"), "w") as f:
            f.write(f"[D-BUS Service]\nName={ft.BUS_NAME}\nExec={ft.fhashd_path()} --workers 1 --idle-exit {IDLE}\n")
        with ft.Bus(servicedir=services) as bus:
            conn = bus.connect()
            w = ft.JobWatcher(conn)
            mgr = ft.manager(conn)
            me = os.path.abspath(__file__)
            job = str(mgr.HashFds(ft.fds(me), "sha256", ft.options()))
            pid = int(conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                         "GetConnectionUnixProcessID", "s", (ft.BUS_NAME,)))
            w.wait([job])
            ft.check(w.results[job][0][2] == ft.sha256_file(me), "activated daemon's digest")
            ft.log(f"ok: activation started fhashd (pid {pid}) on the private bus")

            # Busy: a job on a pipe keeps it alive well past the idle time.
            r, wfd = os.pipe()
            job = str(mgr.HashFds(ft.fds(r), "sha256", ft.options(max_size=1 << 20)))
            os.close(r)
            w.pump(3 * IDLE)
            ft.check(os.path.exists(f"/proc/{pid}"), "fhashd exited while a job was running")
            os.close(wfd)
            w.wait([job])
            # Idle but the owner is still connected (it may call GetResults): still there.
            w.pump(2 * IDLE)
            ft.check(os.path.exists(f"/proc/{pid}"), "fhashd exited while a job owner was connected")
            conn.close()
            t0 = time.monotonic()
            gone = ft.wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
                               open(f"/proc/{pid}/stat").read().split()[2] == "Z", 5 * IDLE + 5)
            ft.check(gone, "fhashd did not exit when idle")
            ft.log(f"ok: idle exit {time.monotonic() - t0:.1f} s after the last client left (--idle-exit {IDLE})")
            c = dbus.bus.BusConnection(bus.address)
            ft.check(not c.name_has_owner(ft.BUS_NAME), "name still owned after idle exit")
            c.close()


if __name__ == "__main__":
    main()
