/* SPDX-License-Identifier: MIT */
#include "toolkit-variables.h"

#include <stdbool.h>
#include <string.h>

#include "macro.h"

/* Sorted in strcmp order. What GTK 3.24.38 and GTK 4.8.3 (with GLib 2.74, Pango 1.50, fontconfig,
 * Mesa 22.3's GL for GTK 4's renderer) read through getenv while a prepared child starts them
 * (gtk_init, the settings' font measured, GTK 3's icon theme, GTK 4's GL programs, libadwaita 1.2's
 * adw_init), on Wayland and
 * on X11, as tools/toolkit-variables/trace.py lists them; and what glibc reads inside setlocale
 * and tzset, which no interposed getenv sees (LC_*, LANG, LANGUAGE, LOCPATH, TZ, TZDIR); and
 * G_SLICE. Left out: Mesa's option "bar", which only its own tests use, and GLib's
 * G_ENABLE_DIAGNOSTIC (docs/limitations.md says why). */
static const char *const variables[] = {
        "ADW_DEBUG_COLOR_SCHEME", "ADW_DEBUG_HIGH_CONTRAST", "ADW_DISABLE_PORTAL", "AS_SECURE_LOG_FILE",
        "AT_SPI_BUS_ADDRESS", "AT_SPI_DISPLAY", "CHARSET", "D3D12_DEBUG",
        "D3D12_VIDEO_ENC_ASYNC", "D3D12_VIDEO_ENC_ASYNC_DEPTH", "D3D12_VIDEO_ENC_CBR_FORCE_VBV_EQUAL_BITRATE",
        "D3D12_VIDEO_ENC_FALLBACK_RATE_CONTROL_CONFIG", "D3D12_VIDEO_ENC_FALLBACK_SLICE_CONFIG",
        "D3D12_VIDEO_ENC_METADATA_BUFFERS_COUNT", "DBUS_SESSION_BUS_ADDRESS", "DBUS_STARTER_ADDRESS",
        "DBUS_SYSTEM_BUS_ADDRESS", "DCONF_PROFILE", "DISPLAY", "DRAW_FSE", "DRAW_NO_FSE", "DRAW_USE_LLVM",
        "EGL_LOG_LEVEL", "EXPAT_ACCOUNTING_DEBUG", "EXPAT_ENTITY_DEBUG", "EXPAT_ENTROPY_DEBUG", "FC_DEBUG",
        "FC_LANG", "FONTCONFIG_FILE", "FONTCONFIG_PATH", "FONTCONFIG_SYSROOT", "FONTCONFIG_USE_MMAP",
        "FREETYPE_PROPERTIES", "GALLIUM_DDEBUG", "GALLIUM_DRIVER", "GALLIUM_DUMP_CPU", "GALLIUM_DUMP_VS",
        "GALLIUM_HUD", "GALLIUM_HUD_SCALE", "GALLIUM_HUD_SHARE", "GALLIUM_HUD_TOGGLE_SIGNAL",
        "GALLIUM_HUD_VISIBLE", "GALLIUM_NOOP", "GALLIUM_NOSSE", "GALLIUM_OVERRIDE_CPU_CAPS",
        "GALLIUM_PRINT_OPTIONS", "GALLIUM_TESTS", "GALLIUM_TRACE", "GALLIVM_PERF", "GDK_BACKEND",
        "GDK_CORE_DEVICE_EVENTS", "GDK_DEBUG", "GDK_DPI_SCALE", "GDK_GL", "GDK_NATIVE_WINDOWS",
        "GDK_PIXBUF_MODULE_FILE", "GDK_RENDERING", "GDK_SCALE", "GDK_SYNCHRONIZE", "GIO_EXTRA_MODULES",
        "GIO_MODULE_DIR", "GIO_USE_VFS", "GSETTINGS_BACKEND", "GSETTINGS_SCHEMA_DIR", "GSK_DEBUG",
        "GTK3_MODULES", "GTK_CSS_DEBUG", "GTK_DATA_PREFIX", "GTK_DEBUG", "GTK_EXE_PREFIX", "GTK_MODULES",
        "GTK_PATH", "GTK_SLOWDOWN", "GTK_THEME", "GTK_USE_PORTAL", "G_BROKEN_FILENAMES", "G_DBUS_DEBUG",
        "G_DEBUG", "G_FILENAME_ENCODING", "G_MESSAGES_DEBUG", "G_RESOURCE_OVERLAYS", "G_SLICE",
        "HB_SHAPER_LIST", "HOME", "INTEL_BLACKHOLE_DEFAULT", "LANG", "LANGUAGE", "LC_ADDRESS", "LC_ALL",
        "LC_COLLATE", "LC_CTYPE", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_MESSAGES", "LC_MONETARY",
        "LC_NAME", "LC_NUMERIC", "LC_PAPER", "LC_TELEPHONE", "LC_TIME", "LIBGL_ALWAYS_INDIRECT",
        "LIBGL_ALWAYS_SOFTWARE", "LIBGL_DEBUG", "LIBGL_DRI2_DISABLE", "LIBGL_DRI3_DISABLE", "LIBGL_DRIVERS_DIR",
        "LIBGL_DRIVERS_PATH", "LLVM_OVERRIDE_PRODUCER", "LOCPATH", "LP_CL", "LP_NATIVE_VECTOR_WIDTH",
        "LP_NO_RAST", "LP_NUM_THREADS", "LP_PERF", "MESA_COMPUTE_PBO", "MESA_DEBUG", "MESA_DISK_CACHE_DATABASE",
        "MESA_DISK_CACHE_SINGLE_FILE", "MESA_EXTENSION_OVERRIDE", "MESA_GLES_VERSION_OVERRIDE", "MESA_GLSL",
        "MESA_GLSL_CACHE_DIR", "MESA_GLSL_CACHE_DISABLE", "MESA_GLSL_CACHE_MAX_SIZE",
        "MESA_GLSL_VERSION_OVERRIDE", "MESA_GL_VERSION_OVERRIDE", "MESA_INFO", "MESA_LOADER_DRIVER_OVERRIDE",
        "MESA_MVP_DP4", "MESA_NO_ERROR", "MESA_NO_MINMAX_CACHE", "MESA_NO_SHADER_REPLACEMENT",
        "MESA_SHADER_CACHE_DIR", "MESA_SHADER_CACHE_DISABLE", "MESA_SHADER_CACHE_MAX_SIZE",
        "MESA_SHADER_CAPTURE_PATH", "MESA_SHADER_DUMP_PATH", "MESA_SHADER_READ_PATH", "MESA_VERBOSE",
        "NO_AT_BRIDGE", "PANGOCAIRO_BACKEND", "PP_DEBUG", "R600_NIR_DEBUG", "RESOURCE_NAME", "ST_DEBUG",
        "SWRAST_NO_PRESENT", "SYSPROF_CONTROL_FD", "TGSI_PRINT_SANITY", "TZ", "TZDIR", "WAYLAND_DEBUG",
        "WAYLAND_DISPLAY", "WAYLAND_SOCKET", "XAUTHORITY", "XCURSOR_PATH", "XDG_CACHE_HOME", "XDG_CONFIG_DIRS",
        "XDG_CONFIG_HOME", "XDG_CURRENT_DESKTOP", "XDG_DATA_DIRS", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
        "XENVIRONMENT", "XKB_CONFIG_EXTRA_PATH", "XKB_CONFIG_ROOT", "XKB_DEBUG", "XKB_DISABLE", "XKB_LOG_LEVEL",
        "XKB_LOG_VERBOSITY", "XLIBBUFFERSIZE", "XLIB_SKIP_ARGB_VISUALS", "_XKB_OPTIONS_ENABLE",
        "__EGL_VENDOR_LIBRARY_DIRS", "__EGL_VENDOR_LIBRARY_FILENAMES", "__GLVND_ABORT_ON_APP_ERROR",
        "__GLVND_APP_ERROR_CHECKING", "__GLVND_DISALLOW_PATCHING", "__GLX_FORCE_VENDOR_LIBRARY_0",
        "__GLX_VENDOR_LIBRARY_NAME", "__GL_SINGLETHREADED", "allow_draw_out_of_order", "allow_extra_pp_tokens",
        "allow_glsl_120_subset_in_110", "allow_glsl_builtin_const_expression",
        "allow_glsl_builtin_variable_redeclaration", "allow_glsl_compat_shaders",
        "allow_glsl_cross_stage_interpolation_mismatch", "allow_glsl_extension_directive_midshader",
        "allow_glsl_relaxed_es", "allow_higher_compat_version", "allow_invalid_glx_destroy_window",
        "allow_rgb10_configs", "always_have_depth_buffer", "block_on_depleted_buffers",
        "disable_arb_gpu_shader5", "disable_blend_func_extended", "disable_glsl_line_continuations",
        "disable_uniform_array_resize", "do_dce_before_clip_cull_analysis", "force_compat_profile",
        "force_compat_shaders", "force_direct_glx_context", "force_gl_map_buffer_synchronized",
        "force_gl_names_reuse", "force_gl_renderer", "force_gl_vendor", "force_glsl_abs_sqrt",
        "force_glsl_extensions_warn", "force_glsl_version", "force_integer_tex_nearest",
        "force_protected_content_check", "glsl_correct_derivatives_after_discard",
        "glsl_ignore_write_to_readonly_var", "glsl_zero_init", "glthread_nop_check_framebuffer_status",
        "glx_extension_override", "ignore_map_unsynchronized", "indirect_gl_extension_override",
        "keep_native_window_glx_drawable", "mesa_extension_override", "mesa_glthread", "mesa_no_error",
        "override_vram_size", "pp_celshade", "pp_jimenezmlaa", "pp_jimenezmlaa_color", "pp_noblue",
        "pp_nogreen", "pp_nored", "transcode_astc", "transcode_etc", "vblank_mode",
        "vs_position_always_invariant", "vs_position_always_precise",
};

static bool is_name_char(char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* strcmp's order between the len bytes at name and the string v. */
static int compare(const char *name, size_t len, const char *v) {
        int r = strncmp(name, v, len);
        return r ? r : v[len] == '\0' ? 0 : -1;
}

static const char *lookup(const char *name, size_t len) {
        size_t lo = 0, hi = ELEMENTSOF(variables);
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int r = compare(name, len, variables[mid]);
                if (r == 0)
                        return variables[mid];
                if (r < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return NULL;
}

/* Name characters numbered 0-62, for the table of pairs that begin a name; -1 for any other. */
static int name_char_index(char c) {
        return c >= 'A' && c <= 'Z'   ? c - 'A'
               : c >= 'a' && c <= 'z' ? 26 + (c - 'a')
               : c >= '0' && c <= '9' ? 52 + (c - '0')
               : c == '_'             ? 62
                                      : -1;
}

/* Whether two name characters begin one of the names: most tails of most words fail here, before
 * the binary search. */
static bool begins_a_name(const char *at) {
        static bool pairs[63][63], made;
        if (!made) {
                for (size_t i = 0; i < ELEMENTSOF(variables); i++)
                        pairs[name_char_index(variables[i][0])][name_char_index(variables[i][1])] = true;
                made = true;
        }
        return pairs[name_char_index(at[0])][name_char_index(at[1])];
}

const char *toolkit_variable_in(const char *bytes, size_t size) {
        const char *end = bytes + size;
        for (const char *p = bytes; p < end;) {
                if (!is_name_char(*p)) {
                        p++;
                        continue;
                }
                const char *start = p;
                while (p < end && is_name_char(*p))
                        p++;
                if (p == end || (*p != '\0' && *p != '='))
                        continue;
                /* Every tail of the word too: a linker may keep "GTK_THEME" as the end of a longer
                 * string that ends alike, and a longer name that ends in one ("MY_DISPLAY") counts,
                 * to be safe. */
                for (const char *s = start; p - s >= 2; s++)
                        if (begins_a_name(s)) {
                                const char *name = lookup(s, (size_t) (p - s));
                                if (name)
                                        return name;
                        }
        }
        return NULL;
}
