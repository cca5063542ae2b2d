/*
 * check.c - the counters behind check.h.
 */
#include "check.h"

int check_failures;
static const char *g_case = "";
static int g_cases;

void check_begin(const char *name)
{
    g_case = name;
    g_cases++;
    fprintf(stderr, "-- %s\n", name);
}

const char *check_case(void)
{
    return g_case;
}

int check_end(void)
{
    if (check_failures) {
        fprintf(stderr, "FAILED: %d check(s) failed (last case: %s, %d cases)\n",
                check_failures, g_case, g_cases);
        return 1;
    }
    fprintf(stderr, "OK: %d cases\n", g_cases);
    return 0;
}
