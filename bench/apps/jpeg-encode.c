/* SPDX-License-Identifier: MIT */
/* Encodes an image with libjpeg and writes the JPEG to stdout.
 * Usage: jpeg-encode [QUALITY [WIDTH HEIGHT]]   (a synthetic gradient)
 *        jpeg-encode QUALITY -                  (a binary PPM, P6 with maxval 255, on stdin) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jpeglib.h>

#include "mark.h"

static unsigned char *read_ppm(FILE *f, int *w, int *h) {
        int maxval;
        if (fscanf(f, "P6 %d %d %d", w, h, &maxval) != 3 || maxval != 255 || *w <= 0 || *h <= 0 ||
            *w > 16384 || *h > 16384 || fgetc(f) == EOF)
                return NULL;
        size_t size = (size_t) *w * (size_t) *h * 3;
        unsigned char *px = malloc(size);
        if (px && fread(px, 1, size, f) != size) {
                free(px);
                return NULL;
        }
        return px;
}

static unsigned char *gradient(int w, int h) {
        unsigned char *px = malloc((size_t) w * (size_t) h * 3);
        for (int y = 0; px && y < h; y++)
                for (int x = 0; x < w; x++) {
                        unsigned char *p = px + ((size_t) y * (size_t) w + (size_t) x) * 3;
                        p[0] = (unsigned char) (x * 255 / w);
                        p[1] = (unsigned char) (y * 255 / h);
                        p[2] = (unsigned char) ((x ^ y) & 0xff);
                }
        return px;
}

int main(int argc, char *argv[]) {
        headstart_mark_main();
        int quality = argc > 1 ? atoi(argv[1]) : 85;
        int w = 640, h = 480;
        unsigned char *px;
        if (argc > 2 && strcmp(argv[2], "-") == 0)
                px = read_ppm(stdin, &w, &h);
        else {
                if (argc > 3) {
                        w = atoi(argv[2]);
                        h = atoi(argv[3]);
                }
                px = w > 0 && h > 0 && w <= 16384 && h <= 16384 ? gradient(w, h) : NULL;
        }
        if (!px || quality < 1 || quality > 100) {
                fprintf(stderr, "jpeg-encode: bad input (usage: jpeg-encode [QUALITY [WIDTH HEIGHT | -]])\n");
                return 2;
        }

        struct jpeg_compress_struct cinfo;
        struct jpeg_error_mgr jerr;
        cinfo.err = jpeg_std_error(&jerr);
        jpeg_create_compress(&cinfo);
        jpeg_stdio_dest(&cinfo, stdout);
        cinfo.image_width = (JDIMENSION) w;
        cinfo.image_height = (JDIMENSION) h;
        cinfo.input_components = 3;
        cinfo.in_color_space = JCS_RGB;
        jpeg_set_defaults(&cinfo);
        jpeg_set_quality(&cinfo, quality, TRUE);
        jpeg_start_compress(&cinfo, TRUE);
        while (cinfo.next_scanline < cinfo.image_height) {
                JSAMPROW row = px + (size_t) cinfo.next_scanline * (size_t) w * 3;
                jpeg_write_scanlines(&cinfo, &row, 1);
        }
        jpeg_finish_compress(&cinfo);
        jpeg_destroy_compress(&cinfo);
        fprintf(stderr, "jpeg-encode: %dx%d at quality %d\n", w, h, quality);
        free(px);
        return 0;
}
