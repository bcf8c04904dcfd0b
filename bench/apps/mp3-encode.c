/* SPDX-License-Identifier: MIT */
/* Encodes sound with LAME and writes the MP3 to stdout.
 * Usage: mp3-encode [SECONDS [FREQUENCY]]   (a synthetic tone, 44.1 kHz mono)
 *        mp3-encode -                       (raw 16-bit little-endian mono 44.1 kHz PCM on stdin) */
#include <lame/lame.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mark.h"

#define RATE 44100
#define CHUNK 4096

static size_t next_samples(short *buf, size_t *t, size_t total, double freq, int from_stdin) {
        if (from_stdin)
                return fread(buf, sizeof(short), CHUNK, stdin);
        size_t n = 0;
        for (; n < CHUNK && *t < total; n++, (*t)++)
                buf[n] = (short) (12000.0 * sin(2.0 * M_PI * freq * (double) *t / RATE));
        return n;
}

int main(int argc, char *argv[]) {
        headstart_mark_main();
        int from_stdin = argc > 1 && strcmp(argv[1], "-") == 0;
        double seconds = argc > 1 && !from_stdin ? atof(argv[1]) : 1.0;
        double freq = argc > 2 ? atof(argv[2]) : 440.0;
        if (seconds <= 0 || seconds > 3600 || freq <= 0) {
                fprintf(stderr, "mp3-encode: bad arguments (usage: mp3-encode [SECONDS [FREQUENCY]] | -)\n");
                return 2;
        }

        lame_global_flags *gf = lame_init();
        lame_set_num_channels(gf, 1);
        lame_set_in_samplerate(gf, RATE);
        lame_set_mode(gf, MONO);
        lame_set_quality(gf, 5);
        lame_set_bWriteVbrTag(gf, 0);
        if (lame_init_params(gf) < 0) {
                fprintf(stderr, "mp3-encode: LAME refused the parameters\n");
                return 1;
        }

        short pcm[CHUNK];
        unsigned char mp3[CHUNK * 5 / 4 + 7200];
        size_t t = 0, total = (size_t) (seconds * RATE), samples = 0, n;
        while ((n = next_samples(pcm, &t, total, freq, from_stdin)) > 0) {
                int out = lame_encode_buffer(gf, pcm, pcm, (int) n, mp3, (int) sizeof mp3);
                if (out < 0)
                        return 1;
                fwrite(mp3, 1, (size_t) out, stdout);
                samples += n;
        }
        int out = lame_encode_flush(gf, mp3, (int) sizeof mp3);
        if (out > 0)
                fwrite(mp3, 1, (size_t) out, stdout);
        lame_close(gf);
        fprintf(stderr, "mp3-encode: %zu samples\n", samples);
        return 0;
}
