/*
 * test_faults.c - fault injection (fault_sweeps.c) over a representative
 * image per version: every read of an open and a snapshot failed in turn,
 * short reads, random corruption.
 */
#include "fault_sweeps.h"

/* ---- the image ------------------------------------------------------------ */

static const fake_loc L_A[] = {{2, 1, 1, 0, 6}, {3, 2, 4, 4, 200}, {2, FAKE_NOLINE, 0, 0, 0},
                               {1, 9, 9, -1, -1}};
static const fake_loc L_B[] = {{10, 20, 20, 8, 30}, {2, 22, 22, 90, 120}};

static fake_target *build_image(const sweep_image *im)
{
    int minor = im->minor;
    fake_target *ft = fake_new(minor);
    uint64_t mod = fake_code(ft, "/srv/app/main.py", "<module>", 1, L_A, 4);
    uint64_t f = fake_code(ft, "/srv/app/main.py", "Handler.process", 1, L_A, 4);
    uint64_t g = fake_code(ft, "/srv/app/héllo.py", "Δοκιμή.run", 20, L_B, 2);
    uint64_t h = fake_code(ft, "/srv/app/😀.py", "日本.helper", 20, L_B, 2);
    uint64_t gen = fake_code(ft, "/srv/app/main.py", "stream", 20, L_B, 2);
    uint64_t in0 = fake_add_interp(ft, 0);
    uint64_t in1 = fake_add_interp(ft, 7);

    fake_thread *t1 = fake_add_thread(ft, in0, 0x7f0000001000ull, 101, 1);
    fake_push_frame(t1, mod, 3);
    fake_push_frame(t1, f, 1);
    fake_push_entry(t1, -1);
    fake_push_frame(t1, g, 11);
    fake_push_frame(t1, h, 0);

    fake_thread *t2 = fake_add_thread(ft, in0, 0x7f0000002000ull, 102, 1);
    fake_push_frame(t2, mod, 0);
    fake_gen_frame(t2, gen, 4, NULL);
    fake_push_frame(t2, g, 2);
    /* deep enough for several chunks */
    for (int i = 0; i < 300; i++)
        fake_push_frame(t2, i % 2 ? f : h, i % 8);

    fake_thread *t3 = fake_add_thread(ft, in1, 0x7f0000003000ull, 103, 1);
    fake_push_frame(t3, mod, 7);
    if (minor >= 15)
        fake_thread_set_holds_gil(t1, 1);
    return ft;
}

int main(void)
{
    static const int minors[] = {13, 14, 15};
    static const char *const labels[] = {"3.13", "3.14", "3.15"};
    sweep_image im[3];
    for (int i = 0; i < 3; i++) {
        im[i] = (sweep_image){labels[i], minors[i], build_image, NULL, 102, 0};
        sweep_all(&im[i], 0, 0);
    }
    for (int i = 0; i < 3; i++)
        random_corruption(&im[i], 5000, 25.0);
    return check_end();
}
