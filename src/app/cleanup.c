#include "cleanup.h"

#include "outfile.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The partial files of one commit, and of a second one being set up. */
#define SLOTS (2 * LBK_OUTFILE_MAX)

static char names[SLOTS][sizeof((lbk_outfile *)0)->temp];
static volatile sig_atomic_t in_use[SLOTS];
static volatile sig_atomic_t held;
static volatile sig_atomic_t waiting_signal;

/* Signals that end a run from outside: Ctrl-C, scancel and mpirun (SIGTERM),
 * a closed terminal, a closed pipe, a CPU-time limit. */
static const int fatal_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXCPU};
#define FATAL_COUNT (int)(sizeof fatal_signals / sizeof *fatal_signals)

void lbk_cleanup_remember(const char *path)
{
    for (int i = 0; i < SLOTS; i++)
        if (!in_use[i]) {
            snprintf(names[i], sizeof names[i], "%s", path);
            /* The name is complete before the handler may read it. */
            atomic_signal_fence(memory_order_seq_cst);
            in_use[i] = 1;
            return;
        }
}

void lbk_cleanup_forget(const char *path)
{
    for (int i = 0; i < SLOTS; i++)
        if (in_use[i] && strcmp(names[i], path) == 0)
            in_use[i] = 0;
}

/* Remove what this process created, then die of the signal as if it had
 * not been caught (the shell sees 128 + sig). */
static void die(int sig)
{
    for (int i = 0; i < SLOTS; i++)
        if (in_use[i])
            unlink(names[i]);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig);
}

static void on_fatal_signal(int sig)
{
    if (held) {
        waiting_signal = sig;
        return;
    }
    die(sig);
}

void lbk_cleanup_hold(void) { held = 1; }

void lbk_cleanup_release(void)
{
    held = 0;
    atomic_signal_fence(memory_order_seq_cst);
    if (waiting_signal)
        die(waiting_signal);
}

static void handle_fatal(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < FATAL_COUNT; i++)
        sigaddset(&sa.sa_mask, fatal_signals[i]);
    sigaddset(&sa.sa_mask, sig);
    sigaction(sig, &sa, NULL);
}

void lbk_cleanup_handle_signals(void)
{
    for (int i = 0; i < FATAL_COUNT; i++) {
        struct sigaction old;
        /* nohup, or a background job of a non-interactive shell: a signal
         * the caller chose to ignore stays ignored. */
        if (sigaction(fatal_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        handle_fatal(fatal_signals[i]);
    }
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGXFSZ, &ignore, NULL);
}

void lbk_cleanup_handle_signal(int sig) { handle_fatal(sig); }
