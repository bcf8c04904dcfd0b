# The two commands of the README: `make demo` and `make test`. Both install what is missing
# (Debian packages through apt, a Python virtual environment in .venv), build, and run.

# Unmodified programs from Debian that the tests run through the daemon (tests/test_corpus.py;
# poppler-utils' pdftotext for tests/test_copies_before_constructors.py; man-db and gettext, whose
# libraries redefine C library functions, for tests/test_interposers.py; apt's apt-get and apt-mark and
# binutils' cross tools, which copy variables pointing into themselves, for tests/test_moved_variables.py).
CORPUS_PACKAGES := gzip bzip2 xz-utils zstd lz4 sed grep gawk mawk coreutils diffutils findutils tar \
	bash perl file bc jq m4 sqlite3 lua5.4 libxml2-utils xxd libjpeg-turbo-progs lame flac opus-tools \
	webp qpdf exiv2 tzdata poppler-utils man-db gettext apt binutils-aarch64-linux-gnu
# GUI programs run under a private X server (Xvfb): our GTK and Qt samples, and Debian's galculator
# (GTK 3) and featherpad (Qt 5), timed to their window shown (launch-timer watches X with libxcb).
# On Wayland they run under a private weston (its X11 backend in a private Xvfb, for a seat; launch-timer's proxy needs no
# library), Qt 5 through its Wayland platform plugin (qtwayland5; GTK 3 has its backend built in).
# Each display comes with a private session bus, as a desktop or kiosk session has: dbus-daemon, and
# GLib's gdbus, which starts the bus's session services and looks at the bus in tests/test_session_bus.py;
# the desktop portal (GTK's backend, which brings the portal itself), which GTK and Qt ask as they start.
GUI_PACKAGES := xvfb libxcb1-dev galculator featherpad fontconfig weston qtwayland5 dbus-daemon libglib2.0-bin \
	xdg-desktop-portal-gtk dconf-service dconf-gsettings-backend libgtk-3-bin
# The current toolkits (issue 27): our GTK 4 and Qt 6 Quick home screen samples (bench/apps/gtk4-tiles.c,
# qml-tiles.cpp; qt6-base-dev brings rcc, which compiles the QML in as a resource) and the QML modules
# they import at run time (QtQuick imports QtQml, which imports QtQml.WorkerScript), Qt 6's Wayland
# platform plugin (qt6-wayland), and the unmodified Debian programs on them in bench's GUI set:
# GNOME's font viewer (GTK 4, libadwaita) and cutemaze (Qt 6 widgets); and GTK 4's widget factory
# (gtk-4-examples), whose window is larger than the kiosk shell's output, which weston refuses with a
# protocol error (tests/test_wayland.py).
GUI4_PACKAGES := libgtk-4-dev qt6-base-dev qt6-declarative-dev qml6-module-qtquick qml6-module-qtquick-window \
	qml6-module-qtqml-workerscript qt6-wayland gnome-font-viewer cutemaze gtk-4-examples
# Man pages from the C programs' --help (help2man), what the unit and terminal tests use, and
# vmtouch, the whole-file locking that `headstart bench --cold` compares pinning with; lld, one of
# the linkers `headstart order` writes orders for (GNU ld and gold come with binutils), and clang,
# whose -finstrument-function-entry-bare libheadstart-order records too, and whose libFuzzer
# (libclang-rt) runs the fuzz targets; bash-completion, whose _longopt the completions of headstartd
# and headstart-pind call (packaging/completion).
# tests/test_program_tls.py serves unmodified programs with thread-local storage in the executable:
# systemd's systemctl, procps' top, binutils' gold and dwp, util-linux's mcookie and ipcmk.
TOOL_PACKAGES := help2man procps systemd vmtouch lld clang libclang-rt-14-dev bash-completion binutils util-linux
# `headstart link` (docs/linking.md): cmake, an unmodified Debian C++ program with 40-odd libraries that
# tests/test_link.py analyses (no other test runs it), and what `make link-demo` builds exiv2 with.
LINK_PACKAGES := cmake libexpat1-dev zlib1g-dev
APT_PACKAGES := meson ninja-build gcc g++ pkg-config python3-venv qtbase5-dev \
	libgtk-3-dev libjpeg-dev libmp3lame-dev libfftw3-dev strace chromium chromium-driver \
	gcc-aarch64-linux-gnu qemu-user-static \
	$(GUI_PACKAGES) $(GUI4_PACKAGES) $(TOOL_PACKAGES) $(LINK_PACKAGES) $(CORPUS_PACKAGES)
VENV := .venv
PY := $(VENV)/bin/python
BUILD := build
BUILD_SAN := build-sanitize
BUILD_A64 := build-aarch64
BUILD_FUZZ := build-fuzz
FUZZ_TARGETS := request elf config schedule pin-plan prepared-store
# Inputs each target runs in `make test` (seconds each), and seconds each runs in `make fuzz-long`.
FUZZ_RUNS := 20000
FUZZ_SECONDS := 600
A64_SYSROOT := $(CURDIR)/build-aarch64-sysroot
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# What the opt-in live boot test needs: QEMU and Debian's kernel (tests/boot/qemu_boot.py).
BOOT_PACKAGES := qemu-system-x86 linux-image-amd64
# What `make deb` builds the Debian packages with, and `make test-deb` checks them with: Debian's
# own tooling (debian/), lintian, and mmdebstrap for a clean Debian 12 root to install them into.
DEB_PACKAGES := debhelper dh-python dpkg-dev lintian mmdebstrap
# `make deb DEB_ARCH=arm64` cross-builds the packages for another architecture (Debian's cross
# toolchain and that architecture's libxcb through multiarch) into build-deb-ARCH.
HOST_ARCH := $(shell dpkg --print-architecture)
DEB_ARCH ?= $(HOST_ARCH)
BUILD_DEB := $(if $(filter $(HOST_ARCH),$(DEB_ARCH)),build-deb,build-deb-$(DEB_ARCH))
# The virtual device (docs/device.md): QEMU for both architectures, and for an arm64 image the
# packages' maintainer scripts run under qemu-user (binfmt_misc) while mmdebstrap builds it.
DEVICE_ARCH ?= arm64
DEVICE_PACKAGES := mmdebstrap qemu-system-arm qemu-system-x86 qemu-user-static binfmt-support e2fsprogs

.PHONY: all deps build build-sanitize build-optimized aarch64 test test-c test-python test-fuzz test-soak test-boot lint demo bench link-demo corpus bench-wider order-demo lazy-corpus schedule-demo fuzz fuzz-long docs deb test-deb device device-bench test-device clean

all: build

# Installs the Debian packages of $(1) that are missing, so a ready machine pays one dpkg query.
define install_missing
	@missing=$$(for p in $(1); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:" $$missing; \
		if ! command -v apt-get >/dev/null; then \
			echo "error: these packages are missing and this is not a Debian-like system: $$missing" >&2; exit 1; fi; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing \
			|| { echo "error: could not install $$missing (run as root or with sudo)" >&2; exit 1; }; \
	fi
endef

deps: $(VENV)/.installed
	$(call install_missing,$(APT_PACKAGES))

$(VENV)/.installed: pyproject.toml
	@command -v python3 >/dev/null || { echo "error: python3 is needed (3.11 or newer)" >&2; exit 1; }
	@python3 -m venv $(VENV) 2>/dev/null || { \
		echo "python3 -m venv failed; installing python3-venv"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq python3-venv \
		&& python3 -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $@

$(BUILD)/build.ninja: | deps
	meson setup $(BUILD) -Dsamples=enabled

# The committed man pages (packaging/man, `make docs`) where man finds them for .venv/bin's programs:
# `man -M .venv/share/man headstartd`, or `man headstartd` with .venv/bin on PATH (man-db looks in
# ../share/man beside each PATH directory).
VENV_MAN_PAGES := $(patsubst packaging/man/%,$(VENV)/share/man/man1/%,$(wildcard packaging/man/*.1))
$(VENV)/share/man/man1/%.1: packaging/man/%.1
	install -D -m 644 $< $@

build: deps $(BUILD)/build.ninja $(VENV_MAN_PAGES)
	ninja -C $(BUILD)

# AddressSanitizer and UndefinedBehaviorSanitizer build of the daemon, the client and the C tests.
$(BUILD_SAN)/build.ninja: | deps
	meson setup $(BUILD_SAN) -Dsamples=disabled -Db_sanitize=address,undefined -Db_lundef=false

build-sanitize: deps $(BUILD_SAN)/build.ninja
	ninja -C $(BUILD_SAN)

# The libFuzzer targets (fuzz/README.md): clang, coverage in every file, ASan and UBSan.
$(BUILD_FUZZ)/build.ninja: | deps
	CC=clang meson setup $(BUILD_FUZZ) -Dfuzz=true -Dsamples=disabled -Db_sanitize=address,undefined \
		-Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link

fuzz: deps $(BUILD_FUZZ)/build.ninja
	ninja -C $(BUILD_FUZZ) $(FUZZ_TARGETS:%=fuzz/fuzz-%)

# Each target over its seed corpus (the crashes found before are in it) and FUZZ_RUNS new inputs,
# which go to a scratch corpus: the committed one stays as it is.
test-fuzz: fuzz
	@for t in $(FUZZ_TARGETS); do \
		scratch=$$(mktemp -d); \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(BUILD_FUZZ)/fuzz/fuzz-$$t -runs=$(FUZZ_RUNS) -seed=1 -rss_limit_mb=2048 $$scratch fuzz/corpus/$$t \
			>$$scratch.log 2>&1 || { cat $$scratch.log; rm -rf $$scratch $$scratch.log; exit 1; }; \
		echo "fuzz-$$t: $$(grep -E '^#[0-9]+[[:space:]]+DONE' $$scratch.log | tr -s ' \t' ' ')"; \
		rm -rf $$scratch $$scratch.log; \
	done

# Opt-in, about 15 minutes: a live daemon under a million mutated requests, 100,000 launches, zygote
# kills and SIGHUPs, launches taken by prepared GTK children, its fds and RSS sampled (tests/soak/soak.py,
# docs/reliability.md). SOAK_ARGS to change the counts; SOAK_DAEMON=build-sanitize/headstartd to have
# LeakSanitizer look too.
test-soak: build build-sanitize
	$(PY) tests/soak/soak.py $(BUILD) $(if $(SOAK_DAEMON),--daemon $(SOAK_DAEMON)) $(SOAK_ARGS)

# Opt-in: FUZZ_SECONDS per target, growing a corpus in build-fuzz/corpus (docs/reliability.md).
fuzz-long: fuzz
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(BUILD_FUZZ)/corpus/$$t; \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		$(BUILD_FUZZ)/fuzz/fuzz-$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -print_final_stats=1 \
			$(BUILD_FUZZ)/corpus/$$t fuzz/corpus/$$t 2>&1 | grep -E '^#[0-9]+[[:space:]]+DONE|stat::|ERROR|SUMMARY' \
			| sed "s/^/fuzz-$$t: /"; \
	done

# What a product image builds: the C parts optimized for speed and for size, natively and for aarch64.
# Compiled (with -Werror) so that warnings only the optimizer sees fail here and not on a user's machine.
OPTIMIZED := release minsize
build-optimized: deps
	@for t in $(OPTIMIZED); do \
		[ -f build-$$t/build.ninja ] || meson setup build-$$t -Dbuildtype=$$t -Dsamples=disabled >/dev/null || exit 1; \
		ninja -C build-$$t >/dev/null || { ninja -C build-$$t; exit 1; }; \
		[ -f build-aarch64-$$t/build.ninja ] || meson setup build-aarch64-$$t --cross-file cross/aarch64-linux-gnu.ini \
			-Dbuildtype=$$t -Dsamples=disabled >/dev/null || exit 1; \
		ninja -C build-aarch64-$$t >/dev/null || { ninja -C build-aarch64-$$t; exit 1; }; \
		echo "built build-$$t and build-aarch64-$$t"; \
	done

# The C parts cross-built for aarch64, and what runs them here under qemu-user: a binfmt
# registration, Debian's arm64 C library, and a sysroot of arm64 Debian programs (tests/aarch64/setup.sh).
$(BUILD_A64)/build.ninja: | deps
	meson setup $(BUILD_A64) --cross-file cross/aarch64-linux-gnu.ini -Dsamples=disabled

aarch64: deps $(BUILD_A64)/build.ninja
	ninja -C $(BUILD_A64)
	$(SUDO) tests/aarch64/setup.sh $(A64_SYSROOT)

test-c: build build-sanitize build-optimized
	meson test -C $(BUILD) --print-errorlogs
	meson test -C $(BUILD_SAN) --print-errorlogs

# The suite twice: against the normal build, then with the sanitizer build of the daemon and client
# launching the normal build's programs. Each run names its slowest tests: make test is to stay
# within 20 minutes here.
test-python: build build-sanitize aarch64
	$(call pytest_suite,HEADSTART_AARCH64_BUILD=$(CURDIR)/$(BUILD_A64) HEADSTART_AARCH64_SYSROOT=$(A64_SYSROOT))
	$(call pytest_suite,HEADSTART_BUILD_DIR=$(CURDIR)/$(BUILD_SAN) HEADSTART_APPS_BUILD_DIR=$(CURDIR)/$(BUILD) \
		HEADSTART_SANITIZED=1 ASAN_OPTIONS=abort_on_error=0:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1)

# One run of the suite with the environment $(1). Most tests wait on the programs they launch, with a
# CPU to spare: they run in TEST_JOBS processes side by side (a file's tests in one, pytest-xdist).
# Those marked `alone` then run by themselves: what they check depends on the machine's CPUs being
# idle (tests/test_prepare_display.py: its daemons prepare children only when a CPU is spare).
TEST_JOBS ?= 2
define pytest_suite
	$(1) $(PY) -m pytest -q --durations=15 -n $(TEST_JOBS) --dist loadfile -m "not alone" tests
	$(1) $(PY) -m pytest -q --durations=10 -m alone tests
endef

lint: deps
	$(VENV)/bin/ruff check python tests device tools
	$(VENV)/bin/ruff format --check python tests device tools

test: lint test-c test-fuzz test-python

# Regenerates the man pages and shell completions from the programs' options (packaging/generate-docs);
# commit the result. tests/test_packaging.py fails while they are stale.
docs: build
	packaging/generate-docs $(BUILD)

# The Debian packages (debian/), built from a copy of the tree in build-deb/ with dpkg-buildpackage;
# the .deb files and lintian's report land in build-deb/.
deb:
	$(call install_missing,$(DEB_PACKAGES) meson ninja-build pkg-config libxcb1-dev python3)
	@if [ "$(DEB_ARCH)" != "$(HOST_ARCH)" ]; then \
		dpkg --print-foreign-architectures | grep -qx $(DEB_ARCH) || { dpkg --add-architecture $(DEB_ARCH); apt-get update -qq; }; \
		dpkg-query -W -f='$${Status}\n' crossbuild-essential-$(DEB_ARCH) libxcb1-dev:$(DEB_ARCH) 2>/dev/null \
			| grep -c 'install ok installed' | grep -qx 2 \
			|| $(SUDO) apt-get install -y -q crossbuild-essential-$(DEB_ARCH) libxcb1-dev:$(DEB_ARCH); \
	fi
	rm -rf $(BUILD_DEB) && mkdir -p $(BUILD_DEB)/headstart
	git ls-files -z --cached --others --exclude-standard | grep -zv '^build-deb' \
		| xargs -0 cp --parents -t $(BUILD_DEB)/headstart
	cd $(BUILD_DEB)/headstart && dpkg-buildpackage $(if $(filter $(HOST_ARCH),$(DEB_ARCH)),,-a$(DEB_ARCH)) -b -us -uc \
		>../build.log 2>&1 || { tail -40 ../build.log; exit 1; }
	lintian --fail-on error $(BUILD_DEB)/*.changes | tee $(BUILD_DEB)/lintian.txt
	@ls $(BUILD_DEB)/*.deb

# Opt-in, minutes: the packages installed with apt into a clean Debian 12 root (mmdebstrap), used as
# a user would (the packaged unit's command, headstart-run, man), then removed and purged
# (tests/deb/check_packages.py).
test-deb: deb $(VENV)/.installed
	$(PY) tests/deb/check_packages.py $(BUILD_DEB)

# The virtual embedded device (docs/device.md), opt-in: images from Debian 12's packages and this
# checkout's packages (cached in build-device/ARCH/), booted by QEMU with an eMMC-like disk.
device:
	$(call install_missing,$(DEVICE_PACKAGES))
	$(if $(filter arm64,$(DEVICE_ARCH)),$(SUDO) cross/binfmt-aarch64.sh)
	$(MAKE) deb DEB_ARCH=$(DEVICE_ARCH)
	$(MAKE) deps
	$(PY) device/image.py --arch $(DEVICE_ARCH) --debs $(if $(filter $(HOST_ARCH),$(DEVICE_ARCH)),build-deb,build-deb-$(DEVICE_ARCH))

# Boots the headstart image (provisioned on its first boot) and checks it; two broken boots must
# each end in one line (device/check.py).
test-device: device
	cd device && ../$(PY) check.py --arch $(DEVICE_ARCH)

# Three arms (stock, headstart, headstart + the boot advice), DEVICE_BOOTS boots each, alternating.
DEVICE_BOOTS ?= 5
device-bench: device
	cd device && ../$(PY) bench.py --arch $(DEVICE_ARCH) --boots $(DEVICE_BOOTS)

# Slow, opt-in: boots Debian's kernel under QEMU (software emulation), records its serial console
# with `headstart boot record` and analyzes it (tests/test_boot.py::test_live_qemu_boot...).
test-boot: deps
	$(call install_missing,$(BOOT_PACKAGES))
	HEADSTART_SLOW_TESTS=1 $(PY) -m pytest -q tests/test_boot.py

# The seed paper's comparison in a few minutes: every sample and a few Debian programs, each against
# daemons that `headstart bench` starts and stops; the tables print, bench-results/ keeps the rest.
# Every mode, the opt-in prepared one too (it pauses between the launches of a GUI program).
demo: build
	$(VENV)/bin/headstart bench --quick --modes exec,preload,warm,pool,learned,warm-up,prepared -o bench-results

# Startup function ordering end to end (docs/ordering.md): the seed's synthetic program and zstd
# from Debian's source, recorded, ordered for GNU ld, checked cold. Root; several minutes.
order-demo: build
	$(PY) bench/order/demo.py $(BUILD)/order-demo $(BUILD)

# headstart lazy plan over every dynamically linked program in /usr/bin and /usr/sbin (docs/lazy.md):
# each launched once with --version, as nobody in namespaces of its own. Root; about 30 minutes on 2 busy cores.
lazy-corpus: build
	$(PY) bench/lazy/corpus.py --jobs 2 $(BUILD)/lazy-corpus

# Link advice end to end (docs/linking.md): `headstart link check` on our samples, then exiv2 0.27.6
# built from Debian's source (CMake, libexiv2.so), analysed, relinked with the advice that holds and
# timed against its first build by exec, with headstartd's warm mode beside. About ten minutes.
link-demo: build
	$(PY) -m headstart link check
	$(PY) bench/link/demo.py $(BUILD)/link-demo

# Per-program scheduling under load (docs/scheduling.md): launch latency and period jitter of a
# periodic task with and without its --schedule, CPU hogs on every core. Root; about a minute.
schedule-demo: build
	$(PY) bench/schedule/partition.py $(BUILD)

# The full run behind docs/results.md.
bench: build
	$(VENV)/bin/headstart bench -o bench-results

# Opt-in, about 10 minutes (issue 30): installs the Debian packages of corpus/packages.txt with apt,
# then takes every ELF program they put in /usr/bin and /usr/sbin: headstartd's verdict on each, and
# each served one launched through a private daemon and by exec (--version, --help, a sample stdin
# for filters), compared byte for byte, as 'nobody' when run as root. The tables and every difference
# (docs/results.md) go to corpus-results/corpus.md, every launch to corpus-results/corpus.json.
corpus: build
	mkdir -p corpus-results
	$(PY) -m headstart.corpus --json corpus-results/corpus.json >corpus-results/corpus.md
	@cat corpus-results/corpus.md

# The wider GUI set (issue 27, bench/programs/wider-gui.txt): unmodified Debian programs on GTK 3,
# GTK 4, Qt 5 and Qt 6 that no test uses, installed here only (no test needs them), timed to their
# first window in exec, pool, learned, warm-up and prepared (--prepare-display), on X11 and Wayland. About
# an hour and a half on 2 cores.
WIDER_GUI_PACKAGES := mousepad gucharmap gnome-mines gnome-sudoku baobab gnome-clocks gnome-chess \
	speedcrunch lximage-qt qpdfview qpwgraph qt6-tools-dev-tools
WIDER_ARGS := --runs 20 --modes exec,pool,learned,warm-up,prepared --clients run --display both
bench-wider: build
	$(call install_missing,$(WIDER_GUI_PACKAGES))
	$(VENV)/bin/headstart bench --programs @bench/programs/wider-gui.txt --ready-window $(WIDER_ARGS) \
		-o bench-results/wider

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_FUZZ) $(BUILD_A64) $(BUILD_DEB) $(A64_SYSROOT) $(foreach t,$(OPTIMIZED),build-$(t) build-aarch64-$(t))
