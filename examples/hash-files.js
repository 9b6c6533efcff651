#!/usr/bin/gjs
// SPDX-License-Identifier: MIT
// hash-files.js: libfhash-glib from GJS (GObject introspection, the Fhash-1.0 typelib). Prints what
// `sha256sum FILE...` prints, through fhashd where it can be reached (the system bus, or --address
// ADDR), else in this process. The files are hashed asynchronously on a GLib main loop; ^C (SIGINT
// or SIGTERM) cancels the run through its GCancellable, which ends it at once.
imports.gi.versions.Fhash = '1.0';
const {Fhash, Gio, GLib} = imports.gi;
const System = imports.system;

// sha256sum's line: a name with a backslash or a newline is escaped, and the line marked.
function line(digest, name) {
    if (name.includes('\\') || name.includes('\n'))
        return `\\${digest}  ${name.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`;
    return `${digest}  ${name}`;
}

let args = ARGV.slice();
let client;
if (args.length >= 2 && args[0] === '--address') {
    client = Fhash.Client.new_for_address(args[1], Fhash.ClientFlags.NONE);
    args = args.slice(2);
} else {
    client = Fhash.Client.new_for_bus(Fhash.BusType.SYSTEM, Fhash.ClientFlags.NONE);
}
const loop = new GLib.MainLoop(null, false);
const cancellable = new Gio.Cancellable();
let status = 0;

client.connect('result', (_client, r) => {
    if (r.get_status() === Fhash.Status.OK) {
        print(line(r.get_digest(), r.get_name()));
    } else {
        // r.get_error() is a GLib.Error of Fhash.ClientError (NOT_FOUND, NOT_REGULAR, ...).
        printerr(`sha256sum: ${r.get_name()}: ${r.get_error().message}`);
        status = 1;
    }
});
for (const signum of [2, 15]) { // SIGINT, SIGTERM
    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signum, () => {
        cancellable.cancel();
        return GLib.SOURCE_CONTINUE;
    });
}
client.hash_async(args, cancellable, (_client, result) => {
    try {
        client.hash_finish(result);
    } catch (e) {
        printerr(`hash-files.js: ${e.message}`);
        status = e.matches(Gio.io_error_quark(), Gio.IOErrorEnum.CANCELLED) ? 130 : 2;
    }
    loop.quit();
});
loop.run();
System.exit(status);
