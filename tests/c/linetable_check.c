/*
 * linetable_check.c - the library's line-table decoder (native/src/
 * linetable.c) against an interpreter's own lines: reads what
 * tests/python/targets/line_tables.py wrote (one code object a line: its
 * format, first line, table, code units, then the interpreter's line of
 * each unit by PyCode_Addr2Line and by the dis module) and asks
 * pyf__linetable_lookup for every unit.  Prints "objects N units M
 * differences D dis_differences E" and the first differences; exit 0.
 * Built and run by tests/python/test_line_tables.py.
 * Usage: linetable_check FILE
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linetable.h"

#define SHOWN 10

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The next whitespace-separated word of *p, NUL-terminated in place. */
static char *word(char **p)
{
    char *s = *p;
    while (*s == ' ')
        s++;
    if (*s == '\0' || *s == '\n')
        return NULL;
    char *e = s;
    while (*e != ' ' && *e != '\n' && *e != '\0')
        e++;
    *p = *e != '\0' ? e + 1 : e;
    *e = '\0';
    return s;
}

static long number(char **p, int *bad)
{
    char *w = word(p), *end;
    if (w == NULL) {
        *bad = 1;
        return 0;
    }
    errno = 0;
    long v = strtol(w, &end, 10);
    if (*end != '\0' || errno != 0)
        *bad = 1;
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: linetable_check FILE\n");
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (in == NULL) {
        perror(argv[1]);
        return 2;
    }
    char *buf = NULL;
    size_t cap = 0;
    unsigned long long objects = 0, units = 0, diffs = 0, dis_diffs = 0;
    int shown = 0, bad = 0;
    uint8_t *tab = NULL;
    while (getline(&buf, &cap, in) > 0 && !bad) {
        char *p = buf;
        char *kind_word = word(&p);
        if (kind_word == NULL || strcmp(kind_word, "files") == 0)
            continue;
        pyf__line_kind kind = strcmp(kind_word, "pep626") == 0   ? PYF__LINES_PEP626
                              : strcmp(kind_word, "lnotab") == 0 ? PYF__LINES_LNOTAB
                                                                 : PYF__LINES_LOCATIONS;
        long first = number(&p, &bad);
        char *hex = word(&p);
        long n = number(&p, &bad);
        if (bad || hex == NULL || kind == PYF__LINES_LOCATIONS || n < 0) {
            bad = 1;
            break;
        }
        size_t len = strcmp(hex, "-") == 0 ? 0 : strlen(hex) / 2;
        free(tab);
        tab = malloc(len + 1);
        if (tab == NULL)
            return 2;
        for (size_t i = 0; i < len; i++) {
            int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
            if (hi < 0 || lo < 0)
                bad = 1;
            tab[i] = (uint8_t)(hi * 16 + lo);
        }
        long *own = malloc(sizeof *own * (size_t)(n + 1));
        if (own == NULL)
            return 2;
        for (long u = 0; u < n && !bad; u++)
            own[u] = number(&p, &bad);
        char *bar = word(&p);
        if (bar == NULL || strcmp(bar, "|") != 0)
            bad = 1;
        objects++;
        for (long u = 0; u < n && !bad; u++) {
            long dis_line = number(&p, &bad);
            pyf__location loc;
            pyf__linetable_lookup(kind, tab, (uint32_t)len, (int32_t)first, u, &loc);
            units++;
            if (loc.line != own[u]) {
                diffs++;
                if (shown++ < SHOWN)
                    printf("difference: object %llu (first line %ld, table %s) unit %ld: "
                           "ours %d, the interpreter's %ld\n",
                           objects, first, hex, u, loc.line, own[u]);
            }
            if (dis_line != own[u])
                dis_diffs++;
        }
        free(own);
    }
    free(tab);
    free(buf);
    fclose(in);
    if (bad) {
        fprintf(stderr, "%s: malformed line after %llu objects\n", argv[1], objects);
        return 2;
    }
    printf("objects %llu units %llu differences %llu dis_differences %llu\n", objects, units,
           diffs, dis_diffs);
    return 0;
}
