/* pageset: a QEMU TCG plugin that measures what one task switch costs QEMU itself.
 *
 * Under TCG every CR3 write flushes the whole soft TLB and the jump cache, so each 4 KiB page
 * touched after it costs a page walk again, and each translation block entered through an
 * indirect jump a hash lookup. This plugin counts, per vCPU, the instructions, the distinct
 * code pages, data pages and translation-block starts between two CR3 writes (a "window": one
 * task switch to the next), and how many instructions ran at each address. Instrumenting every
 * instruction slows QEMU down ~50x, so nothing is instrumented until `skip` CR3 writes have
 * happened (boot, the shell); then the translation cache is flushed and everything from there
 * on is instrumented. Only kernel (upper-half) code and user code below 16 MiB (static
 * binaries) are instrumented; the firmware and dynamic user code are not.
 *
 *   -plugin pageset.so,skip=N,max=N,out=DIR[,words=kernel]
 *
 * At exit DIR/pageset.txt holds the averages per window and the pages seen in at least 10% of
 * the windows (with their share); DIR/insns.txt `in ADDR COUNT` (instructions executed at ADDR)
 * and `tb ADDR COUNT` (windows in which the block at ADDR was entered). tools/qemu-pageset.py
 * turns them into a table by function. */
#include "plugin-api.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_VCPUS 64
#define WIN_SLOTS 8192      /* distinct keys one window can hold (a switch touches ~1,500) */
#define PAGE_SLOTS (1 << 18)
#define INSN_SLOTS (1 << 20)
enum kind { CODE, DATA, TB };

static uint64_t skip = 3000, max_windows = 20000;
static char out_dir[512] = "/tmp";
static qemu_plugin_id_t plugin_id;
static int instrumenting; /* 0: counting CR3 writes only; 1: every instruction */
static uint64_t cr3_writes;

/* One vCPU's current window: a set of keys (a page or block address tagged with its kind)
 * emptied by bumping the generation. */
struct window {
    uint64_t key[WIN_SLOTS];
    uint32_t gen[WIN_SLOTS];
    uint8_t kind[WIN_SLOTS];
    uint32_t g;
    uint64_t n[3], insns, seen;
};
static struct window win[MAX_VCPUS];

/* Over all recorded windows: in how many windows each page appeared, and the execution counts
 * per instruction and per block. */
static uint64_t page_key[PAGE_SLOTS], page_windows[PAGE_SLOTS];
static uint64_t insn_key[2][INSN_SLOTS], insn_count[2][INSN_SLOTS];
/* Accesses to the kernel image's data (its statics), per address, and the instruction that
 * last made each: which statics a switch touches, for tools/qemu-pageset.py's data table and
 * tools/hot-layout.py. With words=kernel, every upper-half address (heap, stacks) is recorded. */
#define IMAGE_BASE 0xffff800000000000ull
static uint64_t words_span = 64ull << 20;
static uint64_t word_key[INSN_SLOTS], word_count[INSN_SLOTS], word_pc[INSN_SLOTS];
static uint64_t windows, total[3], total_insns;

static uint64_t hash(uint64_t k) { return k * 0x9E3779B97F4A7C15ull; }

static void count(uint64_t *keys, uint64_t *counts, int bits, uint64_t k) {
    uint64_t mask = (1ull << bits) - 1;
    for (uint64_t h = hash(k) >> (64 - bits);; h = (h + 1) & mask) {
        if (keys[h] == k) { counts[h]++; return; }
        if (!keys[h]) { keys[h] = k; counts[h] = 1; return; }
    }
}

static int recording(void) { return windows < max_windows; }

static void reset_window(struct window *w) {
    w->g++;
    memset(w->n, 0, sizeof w->n);
    w->insns = 0;
}

/* Adds `k` to the window; 1 if it was new. A window that outgrows the set (a long stretch
 * without a switch) is dropped rather than recorded. */
static int add(struct window *w, uint64_t k, enum kind kind) {
    if (w->n[CODE] + w->n[DATA] + w->n[TB] > WIN_SLOTS / 2) { reset_window(w); w->seen = 0; }
    for (uint64_t h = hash(k) >> 51;; h = (h + 1) & (WIN_SLOTS - 1)) {
        if (w->gen[h] != w->g) { w->gen[h] = w->g; w->key[h] = k; w->kind[h] = kind; w->n[kind]++; return 1; }
        if (w->key[h] == k && w->kind[h] == kind) return 0;
    }
}

static void close_window(struct window *w) {
    /* The first window after instrumenting began started mid-way: not recorded. */
    if (w->seen++ && recording()) {
        windows++;
        total_insns += w->insns;
        for (int k = 0; k < 3; k++) total[k] += w->n[k];
        for (int i = 0; i < WIN_SLOTS; i++)
            if (w->gen[i] == w->g && w->kind[i] != TB)
                count(page_key, page_windows, 18, w->key[i] | w->kind[i]);
    }
    reset_window(w);
}

static struct window *this(unsigned int vcpu) { return &win[vcpu % MAX_VCPUS]; }

static void translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
static void finish(qemu_plugin_id_t id, void *unused);

static void start_instrumenting(qemu_plugin_id_t id) {
    /* Generation 0 would match the zeroed slots: start every window empty at 1. */
    for (int i = 0; i < MAX_VCPUS; i++) win[i].g = 1;
    instrumenting = 1;
    qemu_plugin_register_vcpu_tb_trans_cb(id, translate);
    qemu_plugin_register_atexit_cb(id, finish, 0);
}

static void on_cr3_write(unsigned int vcpu, void *unused) {
    if (!instrumenting) {
        /* Flushes the translation cache, then calls start_instrumenting. */
        if (++cr3_writes == skip) qemu_plugin_reset(plugin_id, start_instrumenting);
        return;
    }
    close_window(this(vcpu));
}

static void on_block(unsigned int vcpu, void *addr) {
    struct window *w = this(vcpu);
    if (add(w, (uint64_t)(uintptr_t)addr, TB) && w->seen && recording())
        count(insn_key[1], insn_count[1], 20, (uint64_t)(uintptr_t)addr);
}

static void on_insn(unsigned int vcpu, void *addr) {
    struct window *w = this(vcpu);
    uint64_t va = (uint64_t)(uintptr_t)addr;
    w->insns++;
    if (w->seen && recording()) count(insn_key[0], insn_count[0], 20, va);
    add(w, va & ~0xfffull, CODE);
}

static void on_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t va, void *pc) {
    struct window *w = this(vcpu);
    add(w, va & ~0xfffull, DATA);
    if (va - IMAGE_BASE < words_span && w->seen && recording()) {
        uint64_t k = va, mask = INSN_SLOTS - 1;
        for (uint64_t h = hash(k) >> 44;; h = (h + 1) & mask) {
            if (word_key[h] == k) { word_count[h]++; word_pc[h] = (uint64_t)(uintptr_t)pc; break; }
            if (!word_key[h]) { word_key[h] = k; word_count[h] = 1; word_pc[h] = (uint64_t)(uintptr_t)pc; break; }
        }
    }
}

/* mov reg, cr3: 0f 22 /3 with a register operand, optionally after a REX prefix. */
static int is_cr3_write(const uint8_t *d, size_t size) {
    if (size == 4 && (d[0] & 0xf0) == 0x40) d++, size--;
    return size == 3 && d[0] == 0x0f && d[1] == 0x22 && (d[2] & 0xf8) == 0xd8;
}

static void translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    uint64_t start = qemu_plugin_tb_vaddr(tb);
    if (!(start >= 0xffff800000000000ull || start < 0x1000000ull)) return;
    if (instrumenting)
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)start);
    for (size_t i = 0; i < qemu_plugin_tb_n_insns(tb); i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t va = qemu_plugin_insn_vaddr(insn);
        if (is_cr3_write(qemu_plugin_insn_data(insn), qemu_plugin_insn_size(insn)))
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_cr3_write, QEMU_PLUGIN_CB_NO_REGS, 0);
        if (!instrumenting) continue;
        qemu_plugin_register_vcpu_insn_exec_cb(insn, on_insn, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)va);
        qemu_plugin_register_vcpu_mem_cb(insn, on_access, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, (void *)(uintptr_t)va);
    }
}

static FILE *open_out(const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", out_dir, name);
    FILE *f = fopen(path, "w");
    if (!f) fprintf(stderr, "pageset: cannot write %s\n", path);
    return f;
}

static void finish(qemu_plugin_id_t id, void *unused) {
    FILE *f = open_out("pageset.txt");
    if (!f) return;
    if (!windows) {
        fprintf(f, "windows 0 (fewer than skip=%" PRIu64 " CR3 writes, or none after)\n", skip);
        fclose(f);
        return;
    }
    double n = (double)windows;
    fprintf(f, "windows %" PRIu64 " insns %.1f code_pages %.1f data_pages %.1f tb_starts %.1f\n", windows,
            total_insns / n, total[CODE] / n, total[DATA] / n, total[TB] / n);
    for (int i = 0; i < PAGE_SLOTS; i++)
        if (page_key[i] && page_windows[i] * 10 >= windows)
            fprintf(f, "%s %016" PRIx64 " %.2f\n", (page_key[i] & 1) ? "data" : "code", (uint64_t)(page_key[i] & ~0xfffull),
                    page_windows[i] / n);
    fclose(f);
    if (!(f = open_out("insns.txt"))) return;
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < INSN_SLOTS; i++)
            if (insn_key[t][i]) fprintf(f, "%s %" PRIx64 " %" PRIu64 "\n", t ? "tb" : "in", insn_key[t][i], insn_count[t][i]);
    for (int i = 0; i < INSN_SLOTS; i++)
        if (word_key[i])
            fprintf(f, "word %" PRIx64 " %" PRIu64 " %" PRIx64 "\n", word_key[i], word_count[i], word_pc[i]);
    fclose(f);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                                               char **argv) {
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "skip=", 5)) skip = strtoull(argv[i] + 5, 0, 0);
        else if (!strncmp(argv[i], "max=", 4)) max_windows = strtoull(argv[i] + 4, 0, 0);
        else if (!strcmp(argv[i], "words=kernel")) words_span = ~0ull >> 17;
        else if (!strncmp(argv[i], "out=", 4)) snprintf(out_dir, sizeof out_dir, "%s", argv[i] + 4);
        else { fprintf(stderr, "pageset: unknown argument %s (skip=N max=N out=DIR words=kernel)\n", argv[i]); return -1; }
    }
    if (!skip) skip = 1;
    plugin_id = id;
    qemu_plugin_register_vcpu_tb_trans_cb(id, translate);
    return 0;
}
