/*
 * fake_checks.c - what tests check snapshots with: the watchdog,
 * the consistency checks, lookup and dump.
 * See fake_target.h.
 */
#include "fake_target.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static char g_watch_what[256];

static void watchdog_fired(int sig)
{
    (void)sig;
    static const char pre[] = "\nWATCHDOG: step took too long (hang?): ";
    ssize_t w = write(2, pre, sizeof pre - 1);
    w = write(2, g_watch_what, strlen(g_watch_what));
    w = write(2, "\n", 1);
    (void)w;
    _exit(3);
}

void fake_watchdog(unsigned seconds, const char *what)
{
    static int installed;
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = watchdog_fired;
        sigaction(SIGALRM, &sa, NULL);
        installed = 1;
    }
    snprintf(g_watch_what, sizeof g_watch_what, "%s: %s", check_case(),
             what ? what : "");
    alarm(seconds);
}

/* ==== snapshot checks ================================================== */

int fake_known_error(int code)
{
    return code <= 0 && code >= PYF_ENOTHREAD;
}

int fake_valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t c;
        int n;
        if (*p < 0x80) {
            p++;
            continue;
        } else if (p[0] == 0xC0 && p[1] == 0x80) {
            p += 2; /* U+0000, as pyframes.h writes it */
            continue;
        } else if ((*p & 0xE0) == 0xC0) {
            c = *p & 0x1F;
            n = 1;
        } else if ((*p & 0xF0) == 0xE0) {
            c = *p & 0x0F;
            n = 2;
        } else if ((*p & 0xF8) == 0xF0) {
            c = *p & 0x07;
            n = 3;
        } else {
            return 0;
        }
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return 0;
            c = c << 6 | (p[i] & 0x3F);
        }
        if ((n == 1 && c < 0x80) || (n == 2 && c < 0x800) || (n == 3 && c < 0x10000))
            return 0; /* overlong */
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            return 0;
        p += n + 1;
    }
    return 1;
}

const char *fake_check_snapshot(const pyf_snapshot *s)
{
    if (s == NULL)
        return "snapshot is NULL";
    if (s->ninterps && s->interps == NULL)
        return "interps NULL";
    if (s->nthreads && s->threads == NULL)
        return "threads NULL";
    if (s->interp_size != sizeof(pyf_interp) || s->thread_size != sizeof(pyf_thread) ||
        s->frame_size != sizeof(pyf_frame))
        return "array strides differ from the frozen element sizes";
    if (s->nframes && s->frames == NULL)
        return "frames NULL";
    for (uint32_t i = 0; i < s->ninterps; i++) {
        const pyf_interp *in = &s->interps[i];
        if ((uint64_t)in->first_thread + in->nthreads > s->nthreads)
            return "interp thread range out of bounds";
        for (uint32_t k = 0; k < in->nthreads; k++)
            if (s->threads[in->first_thread + k].interp_index != i)
                return "thread of an interp range has another interp_index";
    }
    for (uint32_t i = 0; i < s->nthreads; i++) {
        const pyf_thread *t = &s->threads[i];
        if (t->interp_index >= s->ninterps)
            return "thread interp_index out of bounds";
        if ((uint64_t)t->first_frame + t->nframes > s->nframes)
            return "thread frame range out of bounds";
        if (!fake_known_error(t->error))
            return "thread error is not a PYF_E* code";
        if ((t->error == 0) != (t->failure == NULL))
            return "failure present exactly when error != 0";
        if (t->failure != NULL && (t->failure->code != t->error || t->failure->detail[0] == '\0'))
            return "failure's code differs from error, or it has no detail";
        if ((t->flags & PYF_THREAD_COMPLETE) && t->error != 0)
            return "thread COMPLETE with an error";
        if (t->flags & ~0x1Fu)
            return "unknown thread flag";
    }
    for (uint32_t i = 0; i < s->nframes; i++) {
        const pyf_frame *f = &s->frames[i];
        if (f->info.function == NULL || f->info.filename == NULL)
            return "frame string NULL";
        if (!fake_valid_utf8(f->info.function) || !fake_valid_utf8(f->info.filename))
            return "frame string not valid UTF-8";
        if (f->info.flags & ~0x7Fu)
            return "unknown frame flag";
        /* the owner's type: one at most, and only beside GENERATOR */
        uint32_t owner = f->info.flags & (PYF_FRAME_COROUTINE | PYF_FRAME_ASYNC_GENERATOR);
        if (owner != 0 && (!(f->info.flags & PYF_FRAME_GENERATOR) ||
                           owner == (PYF_FRAME_COROUTINE | PYF_FRAME_ASYNC_GENERATOR)))
            return "coroutine or async generator frame without GENERATOR, or both";
    }
    /* the frame table agrees with the frames, frame by frame */
    pyf_frame_table tab;
    tab.struct_size = sizeof tab;
    if (pyf_snapshot_table(s, &tab) != 0)
        return "pyf_snapshot_table failed";
    if (tab.table_id == 0 || tab.nframes != s->nframes ||
        tab.record_size != sizeof(pyf_record) || tab.key_size != sizeof(pyf_frame_key))
        return "frame table header (id, nframes, strides) wrong";
    if ((tab.nframes && tab.frame_keys == NULL) || (tab.nkeys && tab.keys == NULL) ||
        (tab.nrecords && tab.records == NULL))
        return "frame table array NULL";
    for (uint32_t i = 0; i < s->nframes; i++) {
        const pyf_frame *f = &s->frames[i];
        if (tab.frame_keys[i] >= tab.nkeys)
            return "frame key out of bounds";
        const pyf_frame_key *k = &tab.keys[tab.frame_keys[i]];
        if (k->record >= tab.nrecords)
            return "key's record out of bounds";
        const pyf_record *r = &tab.records[k->record];
        /* the one view of a frame: the same bytes in both (padding-free) */
        if (k->frame_addr != f->frame_addr || r->code_addr != f->code_addr ||
            memcmp(&r->info, &f->info, sizeof r->info) != 0)
            return "frame differs from its key and record";
    }
    return NULL;
}

int fake_find_thread(const pyf_snapshot *s, uint64_t native_tid)
{
    for (uint32_t i = 0; i < s->nthreads; i++)
        if (s->threads[i].native_thread_id == native_tid)
            return (int)i;
    return -1;
}

void fake_dump_snapshot(const pyf_snapshot *s, FILE *out)
{
    if (s == NULL) {
        fprintf(out, "  (no snapshot)\n");
        return;
    }
    for (uint32_t i = 0; i < s->ninterps; i++)
        fprintf(out, "  interp[%u] id=%lld addr=0x%llx threads=%u+%u\n", i,
                (long long)s->interps[i].id, (unsigned long long)s->interps[i].addr,
                s->interps[i].first_thread, s->interps[i].nthreads);
    for (uint32_t i = 0; i < s->nthreads; i++) {
        const pyf_thread *t = &s->threads[i];
        fprintf(out, "  thread[%u] ts=0x%llx tid=0x%llx native=%llu interp=%u flags=0x%x "
                "error=%s '%s' frames=%u+%u\n", i, (unsigned long long)t->tstate_addr,
                (unsigned long long)t->thread_id, (unsigned long long)t->native_thread_id,
                t->interp_index, t->flags, pyf_error_name(t->error),
                fake_thread_detail(t), t->first_frame, t->nframes);
        for (uint32_t k = 0; k < t->nframes && t->first_frame + k < s->nframes; k++) {
            const pyf_frame *f = &s->frames[t->first_frame + k];
            const pyf_frame_info *fi = &f->info;
            fprintf(out, "    #%u %s (%s:%d-%d:%d-%d) flags=0x%x frame=0x%llx code=0x%llx\n",
                    k, fi->function, fi->filename, fi->line, fi->end_line, fi->column,
                    fi->end_column, fi->flags, (unsigned long long)f->frame_addr,
                    (unsigned long long)f->code_addr);
        }
    }
}

pyf_snapshot *fake_take(pyf_target *t)
{
    pyf_snapshot *s = NULL;
    fake_watchdog(30, "pyf_snapshot_take");
    int rc = pyf_snapshot_take(t, NULL, &s);
    fake_watchdog(0, NULL);
    CHECK_MSG(rc == 0, "pyf_snapshot_take: %s (%s)", pyf_error_name(rc), fake_last_detail(t));
    if (s != NULL) {
        const char *why = fake_check_snapshot(s);
        CHECK_MSG(why == NULL, "inconsistent snapshot: %s", why);
    }
    return s;
}
