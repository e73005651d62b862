// jemalloc's settings for tenured, read when the allocator starts (MALLOC_CONF still overrides).
// background_thread: memory freed is given back to the system by jemalloc's own thread after its
// decay time. Without it jemalloc purges only while the program allocates, so a daemon that went
// quiet after a burst (a million leases taken, their journal rows checkpointed and freed) held on
// to that memory for ever: 419 → 377 bytes of RSS per live lease 15 s later (docs/benchmarks.md).
// Redis runs jemalloc the same way (jemalloc-bg-thread).
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface.
const char* malloc_conf = "background_thread:true";
}
