/*
 * ft_layouts.c - the layouts tests/c/CMakeLists.txt generated from the
 * installed CPython headers (ft/emit_layout.c), one per version and flavour.
 */
#include "ft_layout.h"

#include <stddef.h>

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
