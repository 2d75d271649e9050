//! The shared-memory emulator conduit.
