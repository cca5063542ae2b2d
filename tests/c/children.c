/*
 * children.c - see children.h.
 */
#include <signal.h>
#include <sys/wait.h>

#include "check.h"
#include "children.h"

#define MAX_CHILDREN 32
static pid_t children[MAX_CHILDREN];
static int nchildren;

void child_track(pid_t pid)
{
    REQUIRE(nchildren < MAX_CHILDREN);
    children[nchildren++] = pid;
}

void child_reap(pid_t pid, int *status)
{
    for (int i = 0; i < nchildren; i++)
        if (children[i] == pid)
            children[i] = 0;
    waitpid(pid, status, 0);
}

void children_kill(void)
{
    for (int i = 0; i < nchildren; i++) {
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
            waitpid(children[i], NULL, 0);
            children[i] = 0;
        }
    }
}
