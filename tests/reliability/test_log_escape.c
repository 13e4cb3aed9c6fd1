/* A message is one line whatever it quotes (src/core/log.h): control bytes
 * and invalid UTF-8 appear as \xNN, valid UTF-8 as it is, and only
 * lbk_log_text prints several lines. The oracle is the expected text,
 * written out by hand. */
#include "lbk_test.h"
#include "log.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* What `emit` writes on stderr, into buf. */
static void capture(void (*emit)(const char *), const char *arg, char *buf, size_t size)
{
    FILE *tmp = tmpfile();
    fflush(stderr);
    const int saved = dup(STDERR_FILENO);
    dup2(fileno(tmp), STDERR_FILENO);
    emit(arg);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    const size_t n = fread(buf, 1, size - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
}

static void emit_error(const char *path) { lbk_error("%s: cannot open: nope", path); }
static void emit_text(const char *text) { lbk_log_text(text); }

typedef struct {
    const char *name;
    const char *path;
    const char *want;
} escape_case;

static const escape_case cases[] = {
    {"newline_and_escape", "a\nlbknn: error: forged\033[2J",
     "lbknn: error: a\\x0albknn: error: forged\\x1b[2J: cannot open: nope\n"},
    {"invalid_utf8", "x\xff\xc3(\xe2\x82.yaml",
     "lbknn: error: x\\xff\\xc3(\\xe2\\x82.yaml: cannot open: nope\n"},
    {"valid_utf8_kept", "caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80",
     "lbknn: error: caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80: cannot open: nope\n"},
    /* C1 controls (U+0080..U+009F, CSI among them) and overlong forms. */
    {"c1_and_overlong",
     "\xc2\x9b"
     "2J\xc0\xaf\x7f\t",
     "lbknn: error: \\xc2\\x9b2J\\xc0\\xaf\\x7f\\x09: cannot open: nope\n"},
};

static void run_escape(const void *row)
{
    const escape_case *c = row;
    char got[1024];
    capture(emit_error, c->path, got, sizeof got);
    LBK_EXPECT_EQ_STR(got, c->want);
}

/* The one multi-line path keeps newlines and tabs, nothing else. */
static void several_lines(void)
{
    char got[1024];
    capture(emit_text, "line 1\n\tline 2\033[1m\n", got, sizeof got);
    LBK_EXPECT_EQ_STR(got, "line 1\n\tline 2\\x1b[1m\n");
}

static const lbk_test_case plain[] = {{"several_lines", several_lines}};

LBK_TEST_MAIN(LBK_TEST_ROWS(cases, run_escape), LBK_TEST_CASES(plain))
