//! `devsim-rtl`: devsim built with the RTL core (the `rtl` feature), under
//! a name that a default build of the workspace never overwrites, so tests
//! and users can name it with `FSHMEM_DEVSIM`. Same commands and flags as
//! `devsim`.

fn main() -> std::process::ExitCode {
    devsim::launch::main()
}
