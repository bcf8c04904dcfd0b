/* SPDX-License-Identifier: MIT */
/* An executable with thread-local variables of its own (PT_TLS): initialised and zero ones, aligned
 * 32 and 64, used by a constructor, by main and by threads. It prints what each thread sees and where
 * each variable is from the thread pointer (local-exec offsets the static linker fixed), which a
 * served launch must show exactly as exec does. Variants (-D) the daemon must send to exec: BIG (a
 * block larger than its reserve), OVER_ALIGNED (aligned more than it), POINTER (an initial value
 * the loader relocates). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define THREADS 4

__thread int counter = 42;
__thread char label[16] = "initial";
__thread _Alignas(32) double weights[4] = { 1.5, 2.5, 3.5, 4.5 };
__thread _Alignas(64) unsigned char scratch[200];
__thread long zero;
#ifdef BIG
__thread char huge[4096] = { 7 };
#endif
#ifdef OVER_ALIGNED
__thread _Alignas(128) int wide = 3;
#endif
#ifdef POINTER
static char text[] = "pointed to";
__thread char *pointer = text;
#endif

static uintptr_t thread_pointer(void) {
        return (uintptr_t) __builtin_thread_pointer();
}

/* The constructor runs before main, in the main thread, as under exec. */
__attribute__((constructor)) static void early(void) {
        counter += 1;
        zero = 5;
}

static void describe(char *out, size_t size, const char *who) {
        uintptr_t tp = thread_pointer();
        double sum = 0;
        for (int i = 0; i < 4; i++)
                sum += weights[i];
        unsigned nonzero = 0;
        for (size_t i = 0; i < sizeof scratch; i++)
                nonzero += scratch[i] != 0;
        int n = snprintf(out, size,
                         "%s: counter=%d label=%s sum=%.1f zero=%ld scratch-nonzero=%u offsets=%lu,%lu,%lu,%lu,%lu "
                         "aligned=%d,%d",
                         who, counter, label, sum, zero, nonzero, (unsigned long) (tp - (uintptr_t) &counter),
                         (unsigned long) (tp - (uintptr_t) label), (unsigned long) (tp - (uintptr_t) weights),
                         (unsigned long) (tp - (uintptr_t) scratch), (unsigned long) (tp - (uintptr_t) &zero),
                         (int) ((uintptr_t) weights % 32 == 0), (int) ((uintptr_t) scratch % 64 == 0));
#ifdef BIG
        n += snprintf(out + n, size - (size_t) n, " huge=%d", huge[0]);
#endif
#ifdef OVER_ALIGNED
        n += snprintf(out + n, size - (size_t) n, " wide=%d", wide);
#endif
#ifdef POINTER
        n += snprintf(out + n, size - (size_t) n, " pointer=%s", pointer);
#endif
        (void) n;
}

/* THREADS at once, then two more one after the other, on the stacks the first ones left (glibc
 * keeps them in a cache and initialises their TLS again). */
#define LATER 2
static char seen[THREADS + LATER][2][512];

static void *work(void *arg) {
        int i = (int) (intptr_t) arg;
        char who[32];
        snprintf(who, sizeof who, "thread %d start", i);
        describe(seen[i][0], sizeof seen[i][0], who);
        counter = 100 + i;
        snprintf(label, sizeof label, "thread-%d", i);
        weights[i % 4] *= 2;
        memset(scratch, i + 1, sizeof scratch);
        zero = -i;
        snprintf(who, sizeof who, "thread %d end", i);
        describe(seen[i][1], sizeof seen[i][1], who);
        return NULL;
}

int main(int argc, char **argv) {
        char line[512];
        describe(line, sizeof line, "main start");
        puts(line);
        counter = 7;
        strcpy(label, "main");
        scratch[10] = 1;
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++)
                if (pthread_create(&t[i], NULL, work, (void *) (intptr_t) i) != 0) {
                        fprintf(stderr, "pthread_create failed\n");
                        return 1;
                }
        for (int i = 0; i < THREADS; i++)
                pthread_join(t[i], NULL);
        for (int i = THREADS; i < THREADS + LATER; i++)
                if (pthread_create(&t[0], NULL, work, (void *) (intptr_t) i) != 0 || pthread_join(t[0], NULL) != 0) {
                        fprintf(stderr, "pthread_create failed\n");
                        return 1;
                }
        for (int i = 0; i < THREADS + LATER; i++)
                printf("%s\n%s\n", seen[i][0], seen[i][1]);
        describe(line, sizeof line, "main end");
        puts(line);
        fprintf(stderr, "%s: %d arguments\n", argc > 1 ? argv[1] : "thread-locals", argc);
        return counter + 3;
}
