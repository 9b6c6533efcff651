#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-daemon-introspect.py: the interface XML shipped in dbus/ describes exactly what a running
# fhashd introspects: the same methods (argument names, types, directions), properties (types,
# access) and signals, on the manager object and on a job object.
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402


def members(xml_text, iface_name):
    """{kind name: signature description} for one interface of an introspection document."""
    root = ET.fromstring(xml_text)
    ifaces = [i for i in root.findall("interface") if i.get("name") == iface_name]
    if len(ifaces) != 1:
        ft.fail(f"{iface_name}: found {len(ifaces)} times")
    out = {}
    for el in ifaces[0]:
        if el.tag in ("method", "signal"):
            args = [(a.get("name"), a.get("type"), a.get("direction", "in" if el.tag == "method" else "out"))
                    for a in el.findall("arg")]
            out[f"{el.tag} {el.get('name')}"] = args
        elif el.tag == "property":
            out[f"property {el.get('name')}"] = (el.get("type"), el.get("access"))
    return out


def compare(shipped_path, live_xml, iface):
    with open(shipped_path) as f:
        shipped = members(f.read(), iface)
    live = members(live_xml, iface)
    if shipped != live:
        for k in sorted(set(shipped) | set(live)):
            if shipped.get(k) != live.get(k):
                print(f"  {k}: shipped {shipped.get(k)} live {live.get(k)}", file=sys.stderr)
        ft.fail(f"{os.path.basename(shipped_path)} does not match the running daemon's {iface}")
    ft.log(f"ok: {os.path.basename(shipped_path)}: {len(shipped)} members match")


def main():
    ft.require()
    src = os.environ.get("FHASH_SOURCE_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    import dbus
    ft.glib_mainloop()
    with ft.Bus() as bus:
        with ft.Daemon(bus, "--workers", "1"):
            conn = bus.connect()
            introspect = "org.freedesktop.DBus.Introspectable"
            live = ft.job_iface(conn, ft.MANAGER_PATH, introspect).Introspect()
            compare(os.path.join(src, "dbus", "org.fhash.Hasher1.Manager.xml"), live, ft.MANAGER_IFACE)

            w = ft.JobWatcher(conn)
            job = str(ft.manager(conn).HashFds(ft.fds(os.path.abspath(__file__)), "sha256", ft.options()))
            w.wait([job])
            live = ft.job_iface(conn, job, introspect).Introspect()
            compare(os.path.join(src, "dbus", "org.fhash.Hasher1.Job.xml"), live, ft.JOB_IFACE)

            # The job directory lists the caller's job as a child node.
            parent = ft.job_iface(conn, "/org/fhash/Hasher1/job", introspect).Introspect()
            nodes = [n.get("name") for n in ET.fromstring(parent).findall("node")]
            ft.check(job.rsplit("/", 1)[1] in nodes, f"job node missing from {nodes}")
            conn.close()
            del dbus


if __name__ == "__main__":
    main()
