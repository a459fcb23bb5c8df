/* gbft-action's engine coverage runtime (issue 38): the callback of an engine built with
 * -fsanitize-coverage=trace-pc (gcc or clang), preloaded into the engine worker.
 *
 * Each instrumented basic block calls __sanitizer_cov_trace_pc(); its return address (the
 * block's PC) goes into an open-addressing set.  The worker takes the set after each model
 * (gbft_cov_take: the PCs seen since the last take, then the set is empty again), so a model's
 * coverage is what it ran, and the host keeps the union.  Lock-free: an engine's threads may
 * insert at once (compare-and-swap on the slot).  A full set drops new PCs and counts them:
 * coverage is then a lower bound, and gbft_cov_dropped says so. */
#include <stdint.h>

#define CAP (1u << 19) /* 4 MiB; a model of MNN's runs some 10^4 blocks */
static uintptr_t table[CAP];
static uint32_t used, dropped;

static inline void insert(uintptr_t pc) {
    uint32_t h = (uint32_t)((pc * 0x9E3779B97F4A7C15ull) >> 40) & (CAP - 1);
    for (uint32_t probes = 0; probes < 64; probes++, h = (h + 1) & (CAP - 1)) {
        uintptr_t seen = __atomic_load_n(&table[h], __ATOMIC_RELAXED);
        if (seen == pc) return;
        if (seen == 0) {
            if (__atomic_load_n(&used, __ATOMIC_RELAXED) >= CAP / 2) break;
            uintptr_t empty = 0;
            if (__atomic_compare_exchange_n(&table[h], &empty, pc, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                __atomic_fetch_add(&used, 1, __ATOMIC_RELAXED);
                return;
            }
            if (empty == pc) return;
        }
    }
    __atomic_fetch_add(&dropped, 1, __ATOMIC_RELAXED);
}

void __sanitizer_cov_trace_pc(void) { insert((uintptr_t)__builtin_return_address(0)); }

/* -fsanitize-coverage=trace-pc-guard (clang's default form) lands here too: one PC per guard. */
void __sanitizer_cov_trace_pc_guard_init(uint32_t *start, uint32_t *stop) { (void)start; (void)stop; }
void __sanitizer_cov_trace_pc_guard(uint32_t *guard) { (void)guard; insert((uintptr_t)__builtin_return_address(0)); }

uint32_t gbft_cov_capacity(void) { return CAP; }
uint32_t gbft_cov_dropped(void) { return dropped; }

/* The PCs seen since the last take into out (room for gbft_cov_capacity() of them), each slot
 * emptied as it is read: a PC another thread inserts meanwhile is in this take or the next,
 * never lost.  Returns how many. */
uint32_t gbft_cov_take(uintptr_t *out) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < CAP; i++) {
        if (__atomic_load_n(&table[i], __ATOMIC_RELAXED) == 0) continue;
        uintptr_t pc = __atomic_exchange_n(&table[i], 0, __ATOMIC_RELAXED);
        if (pc) {
            out[k++] = pc;
            __atomic_fetch_sub(&used, 1, __ATOMIC_RELAXED);
        }
    }
    return k;
}
