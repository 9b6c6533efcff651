/* SPDX-License-Identifier: MIT */
/* fhashd.c: main(): command line, signal mask, then the manager's event loop */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "build-config.h"
#include "daemon/config.h"
#include "daemon/manager.h"
#include "protocol/bus.h"

static void help(void)
{
        printf("Usage: fhashd [OPTIONS]\n"
               "Hash files for D-Bus clients (org.fhash.Hasher1).\n\n"
               "  --system                 Connect to the system bus (default)\n"
               "  --user                   Connect to the user bus\n"
               "  --address ADDR           Connect to the bus at ADDR\n"
               "  --starter                Connect to $DBUS_STARTER_ADDRESS (the default when it is set\n"
               "                           and no bus is chosen: the bus that activated us)\n"
               "  --config PATH            Read only this file (default: " FHASH_SYSCONFDIR "/" FHASH_CONFIG_FILE "\n"
               "                           and its .d/*.conf drop-ins); options below override it\n");
        /* The settings' options, help and defaults come from config.c's table, as the file's do. */
        for (ConfigKeyId id = 0; id < _CONFIG_KEY_MAX; id++) {
                const ConfigKey *k = config_key(id);
                int n;

                if (!k->option)
                        continue;
                n = printf("  --%s %s", k->option, k->metavar);
                printf("%*s %s\n%27s(%s=, default %s)\n", MAX(24 - n, 0), "", k->help, "", k->name,
                       k->default_value);
        }
        printf("  --log-level LEVEL        err, warning, notice, info (default), debug\n"
               "  -h --help                Show this help\n"
               "  --version                Show the version\n");
}

/* The bus, as the command line chose it. */
typedef struct BusArgs {
        BusKind kind;
        const char *address;
} BusArgs;

/* Options with a key in fhashd.conf are set through it: one parser, one set of ranges and messages
 * for the file and the command line. The rest (bus, logging) go into *bus or straight to the logger.
 * Returns 1 to go on, 0 to exit successfully (--help, --version), < 0 on an error it logged. */
static int parse_argv(int argc, char *argv[], FhashConfig *fc, BusArgs *bus)
{
        enum {
                ARG_SYSTEM = 0x100,
                ARG_USER,
                ARG_ADDRESS,
                ARG_STARTER,
                ARG_LOG_LEVEL,
                ARG_VERSION,
                ARG_CONFIG,
                ARG_KEY = 0x200,  /* + ConfigKeyId */
        };
        static const struct option fixed[] = {
                BUS_KIND_OPTIONS(ARG_SYSTEM, ARG_USER, ARG_ADDRESS),
                { "starter", no_argument, NULL, ARG_STARTER },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "config", required_argument, NULL, ARG_CONFIG },
        };
        struct option options[ELEMENTSOF(fixed) + _CONFIG_KEY_MAX + 1] = {};
        size_t n_options = 0;
        bool bus_chosen = false;
        int opt, r;

        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                options[n_options++] = fixed[i];
        for (ConfigKeyId id = 0; id < _CONFIG_KEY_MAX; id++)
                if (config_key(id)->option)
                        options[n_options++] = (struct option){ config_key(id)->option, required_argument, NULL,
                                                                ARG_KEY + (int)id };

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (opt) {
                case ARG_SYSTEM:
                        bus->kind = BUS_KIND_SYSTEM;
                        bus_chosen = true;
                        break;
                case ARG_USER:
                        bus->kind = BUS_KIND_USER;
                        bus_chosen = true;
                        break;
                case ARG_ADDRESS:
                        /* Said as what it is, not as sd-bus's "Protocol not supported" at connect. */
                        if (!bus_address_is_valid(optarg)) {
                                log_error("--address: \"%s\" is not a D-Bus address (TRANSPORT:KEY=VALUE,..., "
                                          "e.g. unix:path=/run/dbus/system_bus_socket).", optarg);
                                return -EINVAL;
                        }
                        bus->kind = BUS_KIND_ADDRESS;
                        bus->address = optarg;
                        bus_chosen = true;
                        break;
                case ARG_STARTER:
                        bus->address = getenv("DBUS_STARTER_ADDRESS");
                        if (!bus->address) {
                                log_error("--starter: $DBUS_STARTER_ADDRESS is not set.");
                                return -EINVAL;
                        }
                        bus->kind = BUS_KIND_ADDRESS;
                        bus_chosen = true;
                        break;
                case ARG_LOG_LEVEL:
                        r = log_level_from_string(optarg);
                        if (r < 0) {
                                log_error("Invalid value for --log-level: %s", optarg);
                                return -EINVAL;
                        }
                        log_set_max_level(r);
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        puts("fhashd " FHASH_VERSION);
                        return 0;
                case ARG_CONFIG:
                        break; /* read before the other options, in load_config() */
                default: {
                        const ConfigKey *k = opt >= ARG_KEY ? config_key(opt - ARG_KEY) : NULL;
                        _cleanup_free_ char *err = NULL;

                        if (!k)
                                return -EINVAL;
                        if (config_set(fc, k->name, optarg, &err) < 0) {
                                log_error("--%s: %s", k->option, err);
                                return -EINVAL;
                        }
                        break;
                }
                }
        }
        if (optind < argc) {
                log_error("Unexpected argument: %s", argv[optind]);
                return -EINVAL;
        }
        /* Bus-activated without a bus option: serve the bus that started us, whichever it is. */
        if (!bus_chosen && getenv("DBUS_STARTER_ADDRESS")) {
                bus->kind = BUS_KIND_ADDRESS;
                bus->address = getenv("DBUS_STARTER_ADDRESS");
        }
        return 1;
}

/* The configuration file comes first; command-line options then override what it says. */
static int load_config(int argc, char *argv[], FhashConfig *fc)
{
        _cleanup_free_ char *err = NULL;
        const char *path = NULL;
        int r;

        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--"))
                        break;
                if (streq(argv[i], "--config") && i + 1 < argc)
                        path = argv[++i];
                else if (strncmp(argv[i], "--config=", 9) == 0)
                        path = argv[i] + 9;
        }

        if (path) {
                r = config_load_file(fc, path, &err);
                if (r == 0) {
                        log_error("%s: No such file or directory", path);
                        return -ENOENT;
                }
        } else
                r = config_load(fc, FHASH_SYSCONFDIR "/" FHASH_CONFIG_FILE,
                                FHASH_SYSCONFDIR "/" FHASH_CONFIG_DROPIN_DIR, &err);
        if (r < 0) {
                log_error("%s", err ? err : "Failed to read the configuration.");
                return r;
        }

        return 0;
}

/* Every fd a client passes stays open in fhashd until its file is hashed, and a message whose fds
 * cannot be received (EMFILE) costs sd-bus the whole bus connection. The usual soft limit of 1024
 * (a bus-activated or hand-started fhashd inherits it; the unit sets LimitNOFILE=) is a select()-era
 * default: the loop is epoll, so take what the hard limit allows. */
static void raise_nofile_limit(void)
{
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_debug_errno(errno, "Failed to raise RLIMIT_NOFILE to its hard limit: %m");
}

int main(int argc, char *argv[])
{
        _cleanup_(manager_freep) Manager *m = NULL;
        FhashConfig fc = config_defaults();
        BusArgs bus = { .kind = BUS_KIND_SYSTEM };
        sigset_t mask;
        int r;

        r = load_config(argc, argv, &fc);
        if (r < 0)
                return 2;
        r = parse_argv(argc, argv, &fc, &bus);
        if (r <= 0)
                return r < 0 ? 2 : 0;

        /* Blocked before the engine starts its threads, so they inherit the mask and the signals
         * reach only the loop's signalfd. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
                log_error_errno(errno, "Failed to block signals: %m");
                return 1;
        }

        /* sd-bus writes with MSG_NOSIGNAL; this covers anything else writing to a dead peer. */
        (void)signal(SIGPIPE, SIG_IGN);
        raise_nofile_limit();

        r = manager_new(&fc, bus.kind, bus.address, &m);
        if (r < 0) {
                log_error_errno(r, "Failed to start the engine: %m");
                return 1;
        }
        r = manager_start(m);
        if (r < 0)
                return 1;
        r = manager_run(m);
        if (r < 0)
                return 1;
        log_info("Exiting.");
        return r;
}
