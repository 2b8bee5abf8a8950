// The binary's allocator: see the comment on `mimalloc` in Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    twice_sim::cli::main()
}
