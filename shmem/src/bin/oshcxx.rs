//! `oshcxx` (installed also as `oshc++`): `oshcc` for C++ programs (it
//! runs `$FSHMEM_CXX`, default `c++`); see `oshcc.rs`.

#[path = "oshcc.rs"]
mod oshcc;

fn main() -> std::process::ExitCode {
    oshcc::main()
}
