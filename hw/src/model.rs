//! The Verilator model of `fshmem_core` behind the C ABI of
//! `hw/sim/fs_model.h`, and [`Core`], its safe owner.

use crate::signals::{BEAT, Inputs, Outputs};
use std::fmt;
use std::ptr::NonNull;

#[repr(C)]
struct FsModel {
    _private: [u8; 0],
}

unsafe extern "C" {
    fn fs_model_new() -> *mut FsModel;
    fn fs_model_free(m: *mut FsModel);
    fn fs_model_step(m: *mut FsModel, inp: *const Inputs, out: *mut Outputs);
    fn fs_model_layout(in_size: *mut u32, out_size: *mut u32, beat: *mut u32);
}

/// Why a model could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// The C and Rust views of the port structures differ (a build mismatch).
    Layout {
        /// `sizeof(fs_in)`, `sizeof(fs_out)`, beat bytes, as C sees them.
        c: (u32, u32, u32),
        /// The same as Rust sees them.
        rust: (u32, u32, u32),
    },
    /// The model could not be allocated.
    OutOfMemory,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Layout { c, rust } => write!(
                f,
                "the RTL model's port layout {c:?} (fs_in, fs_out, beat bytes) differs from \
                 the driver's {rust:?}: rebuild fshmem-hw"
            ),
            ModelError::OutOfMemory => f.write_str("cannot allocate the RTL model"),
        }
    }
}

impl std::error::Error for ModelError {}

/// One instance of the Verilated core. Each [`Core::step`] is one clock
/// cycle; several cores may live in one process.
pub struct Core {
    m: NonNull<FsModel>,
}

// SAFETY: the model is plain heap state owned by this value alone (each
// instance has its own VerilatedContext); it has no thread affinity, so it
// may move to another thread. It is not Sync: `step` needs `&mut self`.
unsafe impl Send for Core {}

impl fmt::Debug for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Core").finish_non_exhaustive()
    }
}

impl Core {
    /// A new core: clock low, in reset until the inputs release `rst_n`.
    pub fn new() -> Result<Core, ModelError> {
        let (mut i, mut o, mut b) = (0u32, 0u32, 0u32);
        // SAFETY: the function writes three u32s through valid pointers.
        unsafe { fs_model_layout(&mut i, &mut o, &mut b) };
        let rust = (
            std::mem::size_of::<Inputs>() as u32,
            std::mem::size_of::<Outputs>() as u32,
            BEAT as u32,
        );
        if (i, o, b) != rust {
            return Err(ModelError::Layout { c: (i, o, b), rust });
        }
        // SAFETY: fs_model_new has no preconditions; it returns an owned
        // model or null.
        let m = unsafe { fs_model_new() };
        NonNull::new(m)
            .map(|m| Core { m })
            .ok_or(ModelError::OutOfMemory)
    }

    /// One clock cycle: applies `inp`, returns the outputs of that cycle
    /// (sampled before the rising edge), then takes the edge.
    pub fn step(&mut self, inp: &Inputs) -> Outputs {
        let mut out = Outputs::default();
        // SAFETY: `m` is a live model owned by self (exclusive through
        // &mut); `inp` and `out` are valid for the structures' sizes, whose
        // layout was checked in `new`.
        unsafe { fs_model_step(self.m.as_ptr(), inp, &mut out) };
        out
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // SAFETY: `m` came from fs_model_new and is freed exactly once.
        unsafe { fs_model_free(self.m.as_ptr()) };
    }
}
