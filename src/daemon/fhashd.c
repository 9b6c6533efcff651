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

#include "build-config.h"
#include "daemon/config.h"
#include "engine/engine.h"
#include "basic/macro.h"
#include "basic/log.h"
#include "daemon/manager.h"

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
               "                           and its .d/*.conf drop-ins); options below override it\n"
               "  --workers N              Hashing threads (0 = one per CPU)\n"
               "  --buffer-size BYTES      Bytes per buffer (K, M, G suffixes)\n"
               "  --buffers N              Buffers in the pool\n"
               "  --io-mode MODE           auto, uring-registered, uring or pread\n"
               "  --idle-exit SECONDS      Exit after this long without jobs or clients (0 = never,\n"
               "                           default IdleExitSec=30)\n"
               "  --keep-finished SECONDS  Keep finished jobs on the bus this long (default 60)\n"
               "  --max-paths N            Paths per HashPaths call (default 100000)\n"
               "  --max-jobs-per-uid N     Unfinished jobs per uid (default 64, 0 = unlimited)\n"
               "  --max-files-per-uid N    Unfinished files per uid (default 1000000, 0 = unlimited)\n"
               "  --log-level LEVEL        err, warning, notice, info (default), debug\n"
               "  -h --help                Show this help\n"
               "  --version                Show the version\n");
}

/* Options with a key in fhashd.conf are set through it: one parser, one set of ranges and messages
 * for the file and the command line. The rest (bus, logging) go straight into *c. */
static int parse_argv(int argc, char *argv[], FhashConfig *fc, ManagerConfig *c)
{
        enum {
                ARG_SYSTEM = 0x100,
                ARG_USER,
                ARG_ADDRESS,
                ARG_STARTER,
                ARG_WORKERS,
                ARG_BUFFER_SIZE,
                ARG_BUFFERS,
                ARG_IO_MODE,
                ARG_IDLE_EXIT,
                ARG_KEEP_FINISHED,
                ARG_MAX_PATHS,
                ARG_MAX_JOBS_PER_UID,
                ARG_MAX_FILES_PER_UID,
                ARG_LOG_LEVEL,
                ARG_VERSION,
                ARG_CONFIG,
        };
        static const struct option options[] = {
                { "system", no_argument, NULL, ARG_SYSTEM },
                { "user", no_argument, NULL, ARG_USER },
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "starter", no_argument, NULL, ARG_STARTER },
                { "workers", required_argument, NULL, ARG_WORKERS },
                { "buffer-size", required_argument, NULL, ARG_BUFFER_SIZE },
                { "buffers", required_argument, NULL, ARG_BUFFERS },
                { "io-mode", required_argument, NULL, ARG_IO_MODE },
                { "idle-exit", required_argument, NULL, ARG_IDLE_EXIT },
                { "keep-finished", required_argument, NULL, ARG_KEEP_FINISHED },
                { "max-paths", required_argument, NULL, ARG_MAX_PATHS },
                { "max-jobs-per-uid", required_argument, NULL, ARG_MAX_JOBS_PER_UID },
                { "max-files-per-uid", required_argument, NULL, ARG_MAX_FILES_PER_UID },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "config", required_argument, NULL, ARG_CONFIG },
                {},
        };
        bool bus_chosen = false;
        /* Defined even when parse_u64() fails: the cases below store it before r is checked. */
        int opt, r;

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                r = 0;
                switch (opt) {
                case ARG_SYSTEM:
                        c->bus_kind = BUS_KIND_SYSTEM;
                        bus_chosen = true;
                        break;
                case ARG_USER:
                        c->bus_kind = BUS_KIND_USER;
                        bus_chosen = true;
                        break;
                case ARG_ADDRESS:
                        c->bus_kind = BUS_KIND_ADDRESS;
                        c->address = optarg;
                        bus_chosen = true;
                        break;
                case ARG_STARTER:
                        c->address = getenv("DBUS_STARTER_ADDRESS");
                        if (!c->address) {
                                log_error("--starter: $DBUS_STARTER_ADDRESS is not set.");
                                return -EINVAL;
                        }
                        c->bus_kind = BUS_KIND_ADDRESS;
                        bus_chosen = true;
                        break;
                case ARG_WORKERS:
                case ARG_BUFFER_SIZE:
                case ARG_BUFFERS:
                case ARG_IO_MODE:
                case ARG_IDLE_EXIT:
                case ARG_KEEP_FINISHED:
                case ARG_MAX_PATHS:
                case ARG_MAX_JOBS_PER_UID:
                case ARG_MAX_FILES_PER_UID: {
                        /* Indexed from ARG_WORKERS, the first of these options. */
                        static const char *const keys[] = {
                                [0] = "Workers",
                                [ARG_BUFFER_SIZE - ARG_WORKERS] = "BufferSize",
                                [ARG_BUFFERS - ARG_WORKERS] = "Buffers",
                                [ARG_IO_MODE - ARG_WORKERS] = "IOMode",
                                [ARG_IDLE_EXIT - ARG_WORKERS] = "IdleExitSec",
                                [ARG_KEEP_FINISHED - ARG_WORKERS] = "KeepFinishedSec",
                                [ARG_MAX_PATHS - ARG_WORKERS] = "MaxPathsPerCall",
                                [ARG_MAX_JOBS_PER_UID - ARG_WORKERS] = "MaxJobsPerUID",
                                [ARG_MAX_FILES_PER_UID - ARG_WORKERS] = "MaxQueuedFilesPerUID",
                        };
                        _cleanup_free_ char *err = NULL;

                        if (config_set(fc, keys[opt - ARG_WORKERS], optarg, &err) < 0) {
                                log_error("--%s: %s", options[opt - ARG_SYSTEM].name, err);
                                return -EINVAL;
                        }
                        break;
                }
                case ARG_LOG_LEVEL:
                        r = log_level_from_string(optarg);
                        if (r >= 0)
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
                default:
                        return -EINVAL;
                }
                if (r < 0) {
                        log_error("Invalid value for --%s: %s", options[opt - ARG_SYSTEM].name, optarg);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                log_error("Unexpected argument: %s", argv[optind]);
                return -EINVAL;
        }
        /* Bus-activated without a bus option: serve the bus that started us, whichever it is. */
        if (!bus_chosen && getenv("DBUS_STARTER_ADDRESS")) {
                c->bus_kind = BUS_KIND_ADDRESS;
                c->address = getenv("DBUS_STARTER_ADDRESS");
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

/* What the file and the command line settled on, in the manager's terms. */
static void apply_config(const FhashConfig *fc, ManagerConfig *c)
{
        config_to_engine_config(fc, &c->engine);
        c->max_paths = fc->max_paths_per_call;
        c->keep_finished_usec = (uint64_t)fc->keep_finished_sec * 1000000u;
        c->idle_exit_usec = (uint64_t)fc->idle_exit_sec * 1000000u;
        c->max_jobs_per_uid = fc->max_jobs_per_uid;
        c->max_files_per_uid = fc->max_queued_files_per_uid;
        c->max_file_size = fc->max_file_size;
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
        ManagerConfig config = MANAGER_CONFIG_DEFAULT;
        FhashConfig fc = FHASH_CONFIG_DEFAULTS;
        sigset_t mask;
        int r;

        r = load_config(argc, argv, &fc);
        if (r < 0)
                return 2;
        r = parse_argv(argc, argv, &fc, &config);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        apply_config(&fc, &config);

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

        r = manager_new(&config, &m);
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
