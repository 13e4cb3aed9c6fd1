/* The harness's runner and assertions (see lbk_test.h). Everything it says
 * goes to stdout, flushed line by line: tests capture and redirect stderr
 * (the code under test reports errors there), and a failure report must
 * not end up in a capture. */
#include "lbk_test.h"

#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Failures printed per case; more are counted, not shown. */
#define SHOWN_MAX 100

enum { RAN = 0, STOPPED = 1, SKIPPED = 2 };

static struct {
    const char *prog;
    const char *name; /* the case running, NULL outside one */
    char **args;
    int nargs;
    int failures;
    int how; /* RAN, STOPPED or SKIPPED */
    int all; /* --all: a case's usage error fails that case, not the run */
    char prefix[64];
    jmp_buf stop;
} run;

static void say(const char *fmt, ...) LBK_TEST_PRINTF(1, 2);
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(run.prefix, stdout);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    va_end(ap);
}

void lbk_test_set_prefix(const char *prefix)
{
    snprintf(run.prefix, sizeof run.prefix, "%s", prefix ? prefix : "");
}

int lbk_test_failures(void) { return run.failures; }

/* ---- operands as written ---- */

/* Operand i of the comma-separated text, as written: commas inside
 * brackets, strings and character constants do not separate. */
static void operand(const char *text, int i, char *out, size_t size)
{
    const char *start = text, *p = text;
    int depth = 0, index = 0;
    char quote = 0;
    for (; *p; p++) {
        if (quote) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == quote)
                quote = 0;
        } else if (*p == '"' || *p == '\'') {
            quote = *p;
        } else if (*p == '(' || *p == '[' || *p == '{') {
            depth++;
        } else if (*p == ')' || *p == ']' || *p == '}') {
            depth--;
        } else if (*p == ',' && depth == 0) {
            if (index == i)
                break;
            index++;
            start = p + 1;
        }
    }
    if (index < i)
        start = p;
    while (start < p && *start == ' ')
        start++;
    const char *end = p;
    while (end > start && end[-1] == ' ')
        end--;
    const int len = (int)(end - start);
    if ((size_t)len < size)
        snprintf(out, size, "%.*s", len, start);
    else
        snprintf(out, size, "%.*s...", (int)size - 4, start);
}

/* ---- failures ---- */

static void stop(void) LBK_TEST_NORETURN;
static void stop(void)
{
    if (run.name)
        longjmp(run.stop, STOPPED);
    exit(1);
}

/* Counts a failure and prints its first line; 0 once too many were shown. */
static int fail_head(lbk_test_at at, const char *fmt, ...) LBK_TEST_PRINTF(2, 3);
static int fail_head(lbk_test_at at, const char *fmt, ...)
{
    if (++run.failures > SHOWN_MAX) {
        if (run.failures == SHOWN_MAX + 1)
            say("(further failures are counted, not shown)");
        return 0;
    }
    char head[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    say("FAIL %s:%d: %s", at.file, at.line, head);
    return 1;
}

static void fail_message(int shown, const char *fmt, va_list ap)
{
    char message[4096];
    vsnprintf(message, sizeof message, fmt, ap);
    if (shown && message[0])
        say("    %s", message);
}

/* Ends a failed check: its message, then the case too when it is fatal. */
#define FAIL_END(at, shown, fmt)                                                                 \
    do {                                                                                         \
        va_list ap_;                                                                             \
        va_start(ap_, fmt);                                                                      \
        fail_message(shown, fmt, ap_);                                                           \
        va_end(ap_);                                                                             \
        if ((at).fatal)                                                                          \
            stop();                                                                              \
    } while (0)

/* cmp: -1, 0 or 1 as a is below, equal to or above b. */
static int holds(const char *op, int cmp)
{
    static const struct {
        const char *op;
        int below, equal, above;
    } ops[] = {{"==", 0, 1, 0}, {"!=", 1, 0, 1}, {"<", 1, 0, 0},
               {"<=", 1, 1, 0}, {">", 0, 0, 1},  {">=", 0, 1, 1}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i].op) == 0)
            return cmp < 0 ? ops[i].below : cmp == 0 ? ops[i].equal : ops[i].above;
    say("harness: '%s' is not one of == != < <= > >=", op);
    exit(2);
}

/* The operator: op, or the text's second operand when op is NULL (a, op, b). */
static const char *op_of(const char *text, const char *op, char *buf, size_t size)
{
    if (op)
        return op;
    operand(text, 1, buf, size);
    return buf;
}

/* The two operands as written, cut out only once a check failed. */
typedef struct {
    char a[512], b[512];
} operands;

static void cut(const char *text, const char *op, operands *o)
{
    operand(text, 0, o->a, sizeof o->a);
    operand(text, op ? 1 : 2, o->b, sizeof o->b);
}

/* Reports a failed comparison whose values are already text; kind is
 * added to the first line (" (float bits)"). Returns fail_head's answer. */
static int compared(lbk_test_at at, const char *text, const char *op, const char *how,
                    const char *kind, const char *va, const char *vb)
{
    operands o;
    cut(text, op, &o);
    const int shown = fail_head(at, "%s %s %s%s", o.a, how, o.b, kind);
    if (shown) {
        say("    %s = %s", o.a, va);
        say("    %s = %s", o.b, vb);
    }
    return shown;
}

/* A signed value that travelled as its two's complement. */
static long long as_signed(unsigned long long u)
{
    return u <= (unsigned long long)LLONG_MAX ? (long long)u : -(long long)~u - 1;
}

int lbk_test_integer_(lbk_test_at at, const char *text, const char *op, int is_signed,
                      unsigned long long a, unsigned long long b, const char *fmt, ...)
{
    const long long sa = as_signed(a), sb = as_signed(b);
    const int cmp = is_signed ? (sa > sb) - (sa < sb) : (a > b) - (a < b);
    char buf[8], va[32], vb[32];
    const char *how = op_of(text, op, buf, sizeof buf);
    if (holds(how, cmp))
        return 1;
    if (is_signed) {
        snprintf(va, sizeof va, "%lld", sa);
        snprintf(vb, sizeof vb, "%lld", sb);
    } else {
        snprintf(va, sizeof va, "%llu", a);
        snprintf(vb, sizeof vb, "%llu", b);
    }
    const int shown = compared(at, text, op, how, "", va, vb);
    FAIL_END(at, shown, fmt);
    return 0;
}

int lbk_test_bits_(lbk_test_at at, const char *text, int width, double a, double b,
                   const char *fmt, ...)
{
    char va[64], vb[64];
    if (width == 32) {
        const float fa = (float)a, fb = (float)b;
        uint32_t ua, ub;
        memcpy(&ua, &fa, sizeof ua);
        memcpy(&ub, &fb, sizeof ub);
        if (ua == ub)
            return 1;
        snprintf(va, sizeof va, "%.9g (0x%08lx)", a, (unsigned long)ua);
        snprintf(vb, sizeof vb, "%.9g (0x%08lx)", b, (unsigned long)ub);
    } else {
        uint64_t ua, ub;
        memcpy(&ua, &a, sizeof ua);
        memcpy(&ub, &b, sizeof ub);
        if (ua == ub)
            return 1;
        snprintf(va, sizeof va, "%.17g (0x%016llx)", a, (unsigned long long)ua);
        snprintf(vb, sizeof vb, "%.17g (0x%016llx)", b, (unsigned long long)ub);
    }
    const char *kind = width == 32 ? " (float bits)" : " (double bits)";
    const int shown = compared(at, text, "==", "==", kind, va, vb);
    FAIL_END(at, shown, fmt);
    return 0;
}

int lbk_test_near_(lbk_test_at at, const char *text, double a, double b, double tol,
                   const char *fmt, ...)
{
    const double diff = fabs(a - b);
    if (diff <= tol)
        return 1;
    operands o;
    char etol[512];
    cut(text, "~", &o);
    operand(text, 2, etol, sizeof etol);
    const int shown = fail_head(at, "%s == %s within %s", o.a, o.b, etol);
    if (shown) {
        say("    %s = %.17g", o.a, a);
        say("    %s = %.17g", o.b, b);
        say("    |difference| = %.17g, tolerance %s = %.17g", diff, etol, tol);
    }
    FAIL_END(at, shown, fmt);
    return 0;
}

/* s quoted, with what does not print escaped; NULL unquoted. */
static void say_string(const char *expr, const char *s)
{
    if (!s) {
        say("    %s = NULL", expr);
        return;
    }
    size_t n = strlen(s), len = 0;
    char *q = malloc(4 * n + 3);
    if (!q) {
        say("    %s = (a string of %zu bytes)", expr, n);
        return;
    }
    q[len++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\n' || *p == '\t' || *p == '"' || *p == '\\')
            len += (size_t)sprintf(q + len, "\\%c",
                                   *p == '\n'   ? 'n'
                                   : *p == '\t' ? 't'
                                                : (char)*p);
        else if (*p < 0x20 || *p >= 0x7f)
            len += (size_t)sprintf(q + len, "\\x%02x", *p);
        else
            q[len++] = (char)*p;
    }
    q[len++] = '"';
    q[len] = '\0';
    say("    %s = %s", expr, q);
    free(q);
}

int lbk_test_str_(lbk_test_at at, const char *text, const char *a, const char *b, const char *fmt,
                  ...)
{
    if (a && b ? strcmp(a, b) == 0 : a == b)
        return 1;
    operands o;
    cut(text, "==", &o);
    const int shown = fail_head(at, "%s == %s (strings)", o.a, o.b);
    if (shown) {
        say_string(o.a, a);
        say_string(o.b, b);
    }
    FAIL_END(at, shown, fmt);
    return 0;
}

int lbk_test_mem_(lbk_test_at at, const char *text, const void *a, const void *b, size_t n,
                  const char *fmt, ...)
{
    const unsigned char *pa = a, *pb = b;
    size_t i = 0;
    if (n > 0 && pa && pb)
        while (i < n && pa[i] == pb[i])
            i++;
    if (n == 0 || (pa && pb && i == n))
        return 1;
    operands o;
    char en[512];
    cut(text, "==", &o);
    operand(text, 2, en, sizeof en);
    const int shown = fail_head(at, "%s == %s (%s = %zu bytes)", o.a, o.b, en, n);
    if (shown && pa && pb) {
        say("    %s: byte %zu is 0x%02x", o.a, i, pa[i]);
        say("    %s: byte %zu is 0x%02x", o.b, i, pb[i]);
    } else if (shown) {
        say("    %s is %s, %s is %s", o.a, pa ? "not NULL" : "NULL", o.b,
            pb ? "not NULL" : "NULL");
    }
    FAIL_END(at, shown, fmt);
    return 0;
}

int lbk_test_bool_(lbk_test_at at, const char *text, int want, int got, const char *fmt, ...)
{
    if (got == want)
        return 1;
    char expr[1024];
    operand(text, 0, expr, sizeof expr);
    const int shown = fail_head(at, "expected %s: %s", want ? "true" : "false", expr);
    if (shown)
        say("    %s is %s", expr, got ? "true" : "false");
    FAIL_END(at, shown, fmt);
    return 0;
}

/* ---- failures and skips without a comparison ---- */

void lbk_test_fail(const char *fmt, ...)
{
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    run.failures++;
    say("FAIL %s: %s", run.name ? run.name : run.prog ? run.prog : "test", why);
    stop();
}

void lbk_test_skip(const char *fmt, ...)
{
    char why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    say("SKIP %s: %s", run.name ? run.name : run.prog ? run.prog : "test", why);
    if (run.name)
        longjmp(run.stop, SKIPPED);
    exit(77);
}

/* ---- the random generator ---- */

#define GOLDEN UINT64_C(0x9e3779b97f4a7c15)

uint64_t lbk_test_mix64(uint64_t x)
{
    uint64_t z = x + GOLDEN;
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint64_t lbk_test_rng_next(lbk_test_rng *rng)
{
    const uint64_t z = lbk_test_mix64(rng->state);
    rng->state += GOLDEN;
    return z;
}

uint64_t lbk_test_rng_below(lbk_test_rng *rng, uint64_t n) { return lbk_test_rng_next(rng) % n; }

float lbk_test_rng_unit(lbk_test_rng *rng)
{
    return (float)(lbk_test_rng_next(rng) >> 40) / (float)(1 << 24);
}

/* ---- cases ---- */

static const char *row_name(const lbk_test_table *t, size_t i)
{
    return *(const char *const *)((const char *)t->rows + i * t->stride);
}

/* A name twice would make one case unreachable: refuse the table. */
static int names_unique(const lbk_test_table *tables, size_t ntables)
{
    for (size_t t = 0; t < ntables; t++)
        for (size_t i = 0; i < tables[t].count; i++)
            for (size_t u = t; u < ntables; u++)
                for (size_t j = u == t ? i + 1 : 0; j < tables[u].count; j++)
                    if (strcmp(row_name(&tables[t], i), row_name(&tables[u], j)) == 0) {
                        say("%s: case '%s' is in the table twice", run.prog,
                            row_name(&tables[t], i));
                        return 0;
                    }
    return 1;
}

static int run_case(const lbk_test_table *t, size_t i)
{
    const void *row = (const char *)t->rows + i * t->stride;
    run.name = row_name(t, i);
    run.failures = 0;
    run.how = RAN;
    switch (setjmp(run.stop)) {
    case RAN:
        if (t->run_row)
            t->run_row(row);
        else
            ((const lbk_test_case *)row)->run();
        break;
    case STOPPED: run.how = STOPPED; break;
    default: run.how = SKIPPED; break;
    }
    const char *name = run.name;
    run.name = NULL;
    if (run.failures) {
        say("%s: %d check(s) failed%s", name, run.failures,
            run.how == STOPPED ? ", the last one stopped the case" : "");
        return 1;
    }
    if (run.how == SKIPPED)
        return 77;
    say("%s: ok", name);
    return 0;
}

/* fail beats skip beats ok: one case skipped on one rank and failed on
 * another failed. */
static int worse(int a, int b)
{
    const int rank_a = a == 0 ? 0 : a == 77 ? 1 : 2, rank_b = b == 0 ? 0 : b == 77 ? 1 : 2;
    return rank_a >= rank_b ? a : b;
}

static int ran(const lbk_test_table *t, size_t i, lbk_test_case_done done)
{
    const int rc = run_case(t, i);
    return done ? done(row_name(t, i), rc) : rc;
}

int lbk_test_main_with(int argc, char **argv, const lbk_test_table *tables, size_t ntables,
                       lbk_test_case_done done)
{
    run.prog = argc > 0 ? argv[0] : "test";
    if (!names_unique(tables, ntables))
        return 2;
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t t = 0; t < ntables; t++)
            for (size_t i = 0; i < tables[t].count; i++)
                printf("%s\n", row_name(&tables[t], i));
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--all") == 0) {
        run.all = 1;
        int worst = 0;
        for (size_t t = 0; t < ntables; t++)
            for (size_t i = 0; i < tables[t].count; i++)
                worst = worse(worst, ran(&tables[t], i, done));
        return worst;
    }
    if (argc < 2) {
        say("usage: %s CASE [ARG...] | --all | --list", run.prog);
        return 2;
    }
    run.args = argv + 2;
    run.nargs = argc - 2;
    for (size_t t = 0; t < ntables; t++)
        for (size_t i = 0; i < tables[t].count; i++)
            if (strcmp(row_name(&tables[t], i), argv[1]) == 0)
                return ran(&tables[t], i, done);
    say("%s: unknown case '%s' (--list shows the cases)", run.prog, argv[1]);
    return 2;
}

int lbk_test_main(int argc, char **argv, const lbk_test_table *tables, size_t ntables)
{
    return lbk_test_main_with(argc, argv, tables, ntables, NULL);
}

void lbk_test_args(int min, int max, const char *usage)
{
    if (run.nargs >= min && (max < 0 || run.nargs <= max))
        return;
    say("usage: %s %s %s", run.prog, run.name ? run.name : "CASE", usage);
    /* --all gives no case its arguments: that case fails, the others run. */
    if (run.all && run.name) {
        run.failures++;
        stop();
    }
    exit(2);
}

int lbk_test_arg_count(void) { return run.nargs; }

const char *lbk_test_arg(int i) { return i >= 0 && i < run.nargs ? run.args[i] : NULL; }
