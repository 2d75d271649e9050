//! The command descriptor a host writes into a board's command queue and the
//! completion entry it reads back, exactly as `spec/registers.md` specifies.
