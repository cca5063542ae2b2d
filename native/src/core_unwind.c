/*
 * core_unwind.c - the native stacks of a core's threads, unwound by libdw
 * (elfutils), optional at build time (PYF_HAVE_LIBDW).
 *
 * libdw reads nothing of the core itself: it is attached with our own
 * Dwfl_Thread_Callbacks (its threads and registers from pyf_core_threads,
 * its memory through the core reader, the same bounded reads as every
 * other), and handed the files the core names, each at its load address,
 * only once the core reader found and checked it (pyf_core_files: the
 * very build the core names, under the sysroot).  So what libdw parses is
 * the call frame information (.eh_frame, .debug_frame) and the symbols of
 * those files (and their separate debug files, by build id), never the
 * core.  A frame is what the CFI unwinds to; the unwind ends where it
 * cannot go on (a file missing, memory the core lacks), said by the
 * failure.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "api.h"
#include "core.h"
#include "elf_reader.h"
#include "errors.h"
#include "reads.h"

_Static_assert(sizeof(pyf_native_frame) == PYF_NATIVE_FRAME_SIZE, "pyf_native_frame is frozen");

#ifndef PYF_HAVE_LIBDW

void pyf__core_unwind_free(pyf_core *c)
{
    (void)c;
}

#else

#include <elfutils/libdwfl.h>
#include <gelf.h>

struct pyf__core_unwind {
    Dwfl *dwfl;
    bool attached;
    char error[256];            /* why the session could not be made */
    pyf_native_frame frames[PYF_NATIVE_MAX_FRAMES];
    char *names[PYF_NATIVE_MAX_FRAMES];
    uint32_t nframes;
};

static void release_names(pyf__core_unwind *u)
{
    for (uint32_t i = 0; i < u->nframes; i++) {
        free(u->names[i]);
        u->names[i] = NULL;
    }
    u->nframes = 0;
}

void pyf__core_unwind_free(pyf_core *c)
{
    pyf__core_unwind *u = c->unwind;
    if (u == NULL)
        return;
    release_names(u);
    if (u->dwfl != NULL)
        dwfl_end(u->dwfl);
    free(u);
    c->unwind = NULL;
}

/* ==== the core's threads, registers and memory, for libdw ================
 * A thread's callback argument is its pyf_core_thread. */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
    pyf_core *c = arg;
    const pyf_core_thread *th = *thread_argp;
    (void)dwfl;
    for (uint32_t i = th == NULL ? 0 : (uint32_t)(th - c->threads) + 1; i < c->nthreads; i++)
        if (c->threads[i].tid != 0 && c->threads[i].tid <= INT32_MAX) {
            *thread_argp = &c->threads[i];
            return (pid_t)c->threads[i].tid;
        }
    return 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
    pyf_core *c = arg;
    (void)dwfl;
    for (uint32_t i = 0; i < c->nthreads; i++)
        if (c->threads[i].tid == (uint64_t)tid) {
            *thread_argp = &c->threads[i];
            return true;
        }
    return false;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
    pyf_reader r;
    uint64_t word = 0;
    (void)dwfl;
    pyf_core_reader(arg, &r);
    if (r.read(r.arg, addr, &word, sizeof word) != PYF_OK)
        return false;
    *result = word;
    return true;
}

/* The thread's registers in DWARF's numbering. */
static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
    const pyf_core_thread *th = thread_arg;
    Dwarf_Word regs[32];
    if (!(th->flags & PYF_CORE_THREAD_REGS))
        return false;
    if (th->nregs == 27) { /* x86-64: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip */
        static const uint8_t from_user[17] = {10, 12, 11, 5, 13, 14, 4, 19,
                                              9, 8, 7, 6, 3, 2, 1, 0, 16};
        for (int i = 0; i < 17; i++)
            regs[i] = th->regs[from_user[i]];
        return dwfl_thread_state_registers(thread, 0, 17, regs);
    }
    if (th->nregs == 34) { /* aarch64: x0-x30, sp, then pc */
        for (int i = 0; i < 32; i++)
            regs[i] = th->regs[i];
        if (!dwfl_thread_state_registers(thread, 0, 32, regs))
            return false;
        dwfl_thread_state_register_pc(thread, th->regs[32]);
        return true;
    }
    return false;
}

static const Dwfl_Thread_Callbacks k_threads = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

/* ==== the files, each where the core maps it ============================== */

static int no_find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
                       Dwarf_Addr base, char **file_name, Elf **elfp)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
    return -1; /* every file is reported with its own descriptor */
}

static char *k_debuginfo_path = NULL;
static const Dwfl_Callbacks k_callbacks = {
    .find_elf = no_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &k_debuginfo_path,
};

/* Report each file the core names and the core reader could use, at the
 * bias its first mapping gives. */
static void report_files(pyf_core *c, Dwfl *dwfl)
{
    for (uint32_t i = 0; i < c->nfiles; i++) {
        pyf_core_file *f = &c->files[i];
        if (f->start == 0)
            continue;
        int fd = pyf__core_file_fd(c, i);
        if (fd < 0)
            continue;
        uint64_t load = 0;
        if (pyf__elf_first_load_fd(fd, &load) != PYF_OK || f->start < load)
            continue;
        int mine = dup(fd);
        if (mine < 0)
            continue;
        /* libdw owns (and closes) mine from here, even when it fails */
        dwfl_report_elf(dwfl, f->path, f->open_path, mine, f->start - load, false);
    }
}

static int session(pyf_core *c, pyf__core_unwind **out, pyf_failure *f)
{
    if (c->unwind == NULL) {
        c->unwind = calloc(1, sizeof *c->unwind);
        if (c->unwind == NULL)
            return pyf__failure_set(f, PYF_ENOMEM, "out of memory");
        pyf__core_unwind *u = c->unwind;
        if (c->info.machine != EM_X86_64 && c->info.machine != EM_AARCH64)
            pyf__fmt(u->error, sizeof u->error, "the core is of machine %u: only x86-64 and "
                     "aarch64 stacks are unwound", c->info.machine);
        else if ((u->dwfl = dwfl_begin(&k_callbacks)) == NULL)
            pyf__fmt(u->error, sizeof u->error, "libdw: %s", dwfl_errmsg(-1));
        else {
            dwfl_report_begin(u->dwfl);
            report_files(c, u->dwfl);
            dwfl_report_end(u->dwfl, NULL, NULL);
            if (!dwfl_attach_state(u->dwfl, NULL, c->info.pid > 0 ? (pid_t)c->info.pid : 1,
                                   &k_threads, c))
                pyf__fmt(u->error, sizeof u->error, "libdw: %s (no file of the core's "
                         "machine was found to unwind with)", dwfl_errmsg(-1));
            else
                u->attached = true;
        }
    }
    *out = c->unwind;
    if (!(*out)->attached)
        return pyf__failure_set(f, PYF_ENOTSUP, "the native stacks of this core cannot be "
                                "unwound: %s", (*out)->error);
    return PYF_OK;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
    pyf__core_unwind *u = arg;
    Dwarf_Addr pc;
    bool activation = false;
    if (u->nframes >= PYF_NATIVE_MAX_FRAMES)
        return DWARF_CB_ABORT;
    if (!dwfl_frame_pc(state, &pc, &activation))
        return DWARF_CB_ABORT;
    pyf_native_frame *fr = &u->frames[u->nframes];
    memset(fr, 0, sizeof *fr);
    fr->pc = pc;
    fr->flags = activation ? PYF_NATIVE_ACTIVATION : 0;
    Dwarf_Word sp = 0;
    if (dwfl_frame_reg(state, 7u, &sp) == 0) /* rsp (x86-64) */
        fr->sp = sp;
    Dwfl_Module *mod = dwfl_addrmodule(dwfl_thread_dwfl(dwfl_frame_thread(state)),
                                       pc - (activation ? 0 : 1));
    if (mod != NULL) {
        GElf_Off offset = 0;
        GElf_Sym sym;
        const char *name = dwfl_module_addrinfo(mod, pc - (activation ? 0 : 1), &offset,
                                                &sym, NULL, NULL, NULL);
        const char *path = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        if (name != NULL) {
            u->names[u->nframes] = strdup(name);
            fr->function = u->names[u->nframes];
            fr->offset = offset + (activation ? 0 : 1);
        }
        fr->module = path;
    }
    u->nframes++;
    return DWARF_CB_OK;
}

static int unwind(pyf_core *c, uint64_t tid, const pyf_native_frame **out, uint32_t *n,
                  pyf_failure *f)
{
    pyf__core_unwind *u = NULL;
    int rc = session(c, &u, f);
    if (rc != PYF_OK)
        return rc;
    const pyf_core_thread *th = NULL;
    for (uint32_t i = 0; i < c->nthreads; i++)
        if (c->threads[i].tid == tid)
            th = &c->threads[i];
    if (th == NULL || tid > INT32_MAX)
        return pyf__failure_set(f, PYF_ENOTHREAD, "the core has no thread %llu",
                                (unsigned long long)tid);
    release_names(u);
    rc = dwfl_getthread_frames(u->dwfl, (pid_t)tid, frame_cb, u);
    *out = u->frames;
    *n = u->nframes;
    if (u->nframes == 0)
        return pyf__failure_set(f, PYF_EFAULT, "thread %llu: no frame could be unwound "
                                "(libdw: %s)", (unsigned long long)tid,
                                rc < 0 ? dwfl_errmsg(-1) : "none");
    return PYF_OK;
}

#endif /* PYF_HAVE_LIBDW */

int pyf_core_native_frames(pyf_core *c, uint64_t tid, const pyf_native_frame **out,
                           uint32_t *n, pyf_failure *failure)
{
    pyf_failure f;
    if (out != NULL)
        *out = NULL;
    if (n != NULL)
        *n = 0;
    if (!pyf__failure_begin(failure, &f))
        return PYF_EINVAL;
    if (c == NULL || out == NULL || n == NULL)
        return pyf__failure_out(failure, &f, pyf__failure_set(&f, PYF_EINVAL,
                                                              "a NULL argument"));
#ifdef PYF_HAVE_LIBDW
    return pyf__failure_out(failure, &f, unwind(c, tid, out, n, &f));
#else
    (void)tid;
    return pyf__failure_out(failure, &f, pyf__failure_set(
        &f, PYF_ENOTSUP, "this libpyframes was built without libdw, which unwinds the native "
        "stacks of a core (build it with libdw-dev installed)"));
#endif
}
