use clap::Parser;

/// jemalloc, not the C library's allocator: the operator keeps thousands of small
/// cached objects for hours among short-lived ones, and glibc's heap, even trimmed,
/// held about as much again scattered in pages still in use, while musl's is slow
/// (docs/design-notes.md, "Agents at 10,000": 3,000 agents 54 MiB and 0.9% of a core,
/// against glibc's 64 MiB and 1.2%).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() {
    std::process::exit(overseer::cli::dispatch(overseer::cli::Cli::parse()).await);
}
