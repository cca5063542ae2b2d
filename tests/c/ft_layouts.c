/*
 * ft_layouts.c - the layouts tests/c/CMakeLists.txt generated from the
 * installed CPython headers (ft/emit_layout.c), one per version and flavour.
 */
#include "ft_layout.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const ft_layout ft_layouts[] = {
#include "ft_layouts_list.inc"
    {.name = NULL},
};

const char ft_layouts_missing[] =
#include "ft_layouts_missing.inc"
    ;

const ft_layout *ft_layout_find(int minor, int free_threaded)
{
    for (const ft_layout *l = ft_layouts; l->name != NULL; l++)
        if (l->minor == minor && l->free_threaded == free_threaded)
            return l;
    return NULL;
}

/* Inside the sandbox root (its -dev headers are part of it)? */
static int in_sandbox(void)
{
    const char *v = getenv("PYFRAMES_IN_SANDBOX");
    struct stat st;
    return (v != NULL && strcmp(v, "1") == 0) || stat("/src/native", &st) == 0;
}

int ft_layouts_missing_exit(void)
{
    if (ft_layouts_missing[0] == '\0')
        return 0;
    if (in_sandbox()) {
        fprintf(stderr, "CPython -dev headers missing from the sandbox root: %s\n",
                ft_layouts_missing);
        return 1;
    }
    fprintf(stderr, "SKIP: no CPython -dev headers (%s), so no layout from CPython itself\n",
            ft_layouts_missing);
    return 77;
}
