fn main() -> std::process::ExitCode {
    twice_sim::cli::main()
}
