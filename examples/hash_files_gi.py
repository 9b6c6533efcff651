#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""hash_files_gi.py: libfhash-glib from PyGObject (GObject introspection, the Fhash-1.0 typelib).
Prints what `sha256sum FILE...` prints, through fhashd where it can be reached (the system bus, or
--address ADDR), else in this process. The files are hashed asynchronously on a GLib main loop; ^C
(SIGINT or SIGTERM) cancels the run through its GCancellable, which ends it at once."""
import signal
import sys

import gi

gi.require_version("Fhash", "1.0")
from gi.repository import Fhash, Gio, GLib  # noqa: E402


def line(digest, name):
    """sha256sum's line: a name with a backslash or a newline is escaped, and the line marked."""
    if "\\" in name or "\n" in name:
        return "\\" + digest + "  " + name.replace("\\", "\\\\").replace("\n", "\\n")
    return digest + "  " + name


def main(argv):
    args = argv[1:]
    if len(args) >= 2 and args[0] == "--address":
        client = Fhash.Client.new_for_address(args[1], Fhash.ClientFlags.NONE)
        args = args[2:]
    else:
        client = Fhash.Client.new_for_bus(Fhash.BusType.SYSTEM, Fhash.ClientFlags.NONE)
    loop = GLib.MainLoop()
    cancellable = Gio.Cancellable()
    status = 0

    def on_result(_client, r):
        nonlocal status
        if r.get_status() == Fhash.Status.OK:
            print(line(r.get_digest(), r.get_name()), flush=True)
        else:
            # r.get_error() is a GLib.Error of Fhash.ClientError (NOT_FOUND, NOT_REGULAR, ...).
            print(f"sha256sum: {r.get_name()}: {r.get_error().message}", file=sys.stderr)
            status = 1

    def on_done(client, result):
        nonlocal status
        try:
            client.hash_finish(result)
        except GLib.Error as e:
            print(f"hash_files_gi.py: {e.message}", file=sys.stderr)
            status = 130 if e.matches(Gio.io_error_quark(), Gio.IOErrorEnum.CANCELLED) else 2
        loop.quit()

    def on_signal():
        cancellable.cancel()
        return GLib.SOURCE_CONTINUE

    for sig in (signal.SIGINT, signal.SIGTERM):
        GLib.unix_signal_add(GLib.PRIORITY_HIGH, sig, on_signal)
    client.connect("result", on_result)
    client.hash_async(args, cancellable, on_done)
    loop.run()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
