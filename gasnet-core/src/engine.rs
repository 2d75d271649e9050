//! The reference core engine: the software twin of the hardware GASNet core.
