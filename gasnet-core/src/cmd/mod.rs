//! The board interface a host sees, exactly as `spec/registers.md` specifies
//! it: PCI identity, the BAR0 register map and queue geometry, the 64-byte
//! command descriptor a host writes into the command queue ([`Descriptor`]),
//! the 32-byte completion entry it reads back ([`Completion`]) and the
//! 128-byte receive entry through which the board hands incoming active
//! messages to host handlers ([`RxEntry`]).
//!
//! Every decoder here takes untrusted bytes and answers a [`CmdError`] naming
//! what is wrong, never a panic. All multi-byte fields are little-endian.
//!
//! ```
//! use gasnet_core::cmd::{self, Common, Descriptor, Inline, PutSource};
//! let d = Descriptor::Put {
//!     common: Common { tag: 7, completion: true, fence_before: false },
//!     target: 1,
//!     remote: 0x40,
//!     source: PutSource::Inline(Inline::new(&[1, 2, 3, 4]).unwrap()),
//! };
//! let slot = cmd::encode(&d);
//! assert_eq!(slot[0], cmd::opcode::PUT);
//! assert_eq!(cmd::decode(&slot).unwrap(), d);
//! ```

mod completion;
mod desc;
mod error;
mod rx;

pub use completion::{COMPLETION_BYTES, Completion, Status};
pub use desc::{
    AmBody, Args, CHAIN_ARGS, Common, Descriptor, Encoded, INLINE_ARGS, Inline, Local, MAX_INLINE,
    MAX_TRANSFER, PutSource, SLOT_BYTES, decode, decode_chain, encode, encode_slots, slot_count,
};
pub use error::CmdError;
pub use rx::{RX_ENTRY_BYTES, RxEntry};

/// PCI vendor id the board's PCIe hard IP is programmed with (Intel/Altera).
pub const PCI_VENDOR_ID: u16 = 0x1172;
/// PCI device id of an fshmem board (ASCII "SH").
pub const PCI_DEVICE_ID: u16 = 0x5348;
/// PCI class code: processing accelerator (base 0x12, sub 0x00, prog-if 0x00).
pub const PCI_CLASS: u32 = 0x12_0000;

/// Value of the [`regs::MAGIC`] register: the bytes `"FSHM"` read as a
/// little-endian `u32`.
pub const MAGIC: u32 = u32::from_le_bytes(*b"FSHM");
/// Interface major version: a host refuses a board whose major differs.
pub const VERSION_MAJOR: u16 = 1;
/// Interface minor version: additions that a host of a lower minor may ignore
/// (1.1 added `UPTIME`; 1.2 added [`err::COMPUTE`]).
pub const VERSION_MINOR: u16 = 2;
/// Value of the [`regs::VERSION`] register: major in bits 31:16, minor in 15:0.
pub const VERSION: u32 = ((VERSION_MAJOR as u32) << 16) | VERSION_MINOR as u32;

/// Size of BAR0 in bytes.
pub const BAR0_SIZE: usize = 0x1_0000;

/// File name of BAR0 in a board model's directory (the model of a PCI
/// function's `resource0`).
pub const BOARD_FILE_BAR0: &str = "bar0";
/// File name of BAR2 in a board model's directory (`resource2_wc`).
pub const BOARD_FILE_BAR2: &str = "bar2";
/// File of a board model's directory whose first 32-bit word is nonzero
/// while the simulated board dozes (blocks waiting for work); a hardware
/// board has none. A host that stores `DOORBELL` or `CTRL`, then (after a
/// full fence) finds the word nonzero, swaps it to 0 and sends one byte to
/// [`BOARD_FILE_WAKE`] (`spec/registers.md` §13).
pub const BOARD_FILE_DOZE: &str = "doze";
/// The Unix datagram socket of a board model's directory that wakes a
/// dozing board ([`BOARD_FILE_DOZE`]).
pub const BOARD_FILE_WAKE: &str = "wake";
/// Command (submission) queue entries.
pub const SQ_ENTRIES: u32 = 256;
/// Completion queue entries.
pub const CQ_ENTRIES: u32 = 256;
/// Receive queue entries.
pub const RQ_ENTRIES: u32 = 64;
/// Size of each receive slot's Medium bounce buffer in BAR2 (one per RQ entry).
pub const RX_BOUNCE_BYTES: u64 = crate::types::MAX_MEDIUM as u64;
/// Number of board link ports.
pub const LINK_PORTS: usize = 2;

/// Descriptor opcodes (byte 0 of a command slot).
pub mod opcode {
    /// Does nothing; completes at once (a queue probe).
    pub const NOP: u8 = 0x01;
    /// Waits for every earlier command to complete before any later one starts.
    pub const FENCE: u8 = 0x02;
    /// Copies local bytes (or inline bytes) into a target's segment.
    pub const PUT: u8 = 0x08;
    /// Copies bytes from a target's segment into local memory.
    pub const GET: u8 = 0x09;
    /// Base of the AM opcodes: `AM | reply << 3 | category` where category is
    /// 0 Short, 1 Medium, 2 Long.
    pub const AM: u8 = 0x10;
    /// Short AM request.
    pub const AM_SHORT_REQUEST: u8 = 0x10;
    /// Medium AM request.
    pub const AM_MEDIUM_REQUEST: u8 = 0x11;
    /// Long AM request.
    pub const AM_LONG_REQUEST: u8 = 0x12;
    /// Short AM reply.
    pub const AM_SHORT_REPLY: u8 = 0x18;
    /// Medium AM reply.
    pub const AM_MEDIUM_REPLY: u8 = 0x19;
    /// Long AM reply.
    pub const AM_LONG_REPLY: u8 = 0x1A;
    /// Continuation slot of a chained AM (arguments 8..16).
    pub const AM_CONTINUATION: u8 = 0x1F;
    /// Remote atomic.
    pub const AMO: u8 = 0x20;
}

/// Descriptor flag bits (byte 1 of a command slot).
pub mod flags {
    /// Write a completion entry on success (errors always write one).
    pub const COMPLETION: u8 = 1 << 0;
    /// Start only after every earlier command has completed.
    pub const FENCE_BEFORE: u8 = 1 << 1;
    /// The local address is a host IOVA (DMA), not a local segment offset.
    pub const LOCAL_IOVA: u8 = 1 << 2;
    /// Put only: the payload is inline in bytes 32..64.
    pub const INLINE: u8 = 1 << 3;
    /// AM only: more than 8 arguments; the next slot is a continuation.
    pub const CHAIN: u8 = 1 << 4;
    /// Every bit this version defines.
    pub const DEFINED: u8 = COMPLETION | FENCE_BEFORE | LOCAL_IOVA | INLINE | CHAIN;
}

/// BAR0 register offsets (bytes from the start of BAR0). Every register is
/// 32 bits wide; 64-bit quantities are a `_LO` register with the `_HI` one
/// at the next 4 bytes.
pub mod regs {
    /// RO: [`super::MAGIC`] ("FSHM").
    pub const MAGIC: usize = 0x000;
    /// RO: [`super::VERSION`] (major 31:16, minor 15:0).
    pub const VERSION: usize = 0x004;
    /// RO: capability bits, see [`super::caps`].
    pub const CAPS: usize = 0x008;
    /// RO: bitstream build identifier (informational).
    pub const BUILD_ID: usize = 0x00C;
    /// RW (while disabled): this board's node id, bits 15:0.
    pub const NODE_ID: usize = 0x010;
    /// RW (while disabled): number of nodes in the job, bits 16:0 (1..=65535).
    pub const NODE_COUNT: usize = 0x014;
    /// RO: size of the BAR2 DDR window in bytes, low half.
    pub const WINDOW_SIZE_LO: usize = 0x020;
    /// RO: size of the BAR2 DDR window in bytes, high half.
    pub const WINDOW_SIZE_HI: usize = 0x024;
    /// RW (while disabled): segment base as a BAR2 offset, low half.
    pub const SEG_BASE_LO: usize = 0x028;
    /// RW (while disabled): segment base as a BAR2 offset, high half.
    pub const SEG_BASE_HI: usize = 0x02C;
    /// RW (while disabled): segment size in bytes, low half.
    pub const SEG_SIZE_LO: usize = 0x030;
    /// RW (while disabled): segment size in bytes, high half.
    pub const SEG_SIZE_HI: usize = 0x034;
    /// RW (while disabled): BAR2 offset of the Medium bounce area, low half.
    pub const RX_BOUNCE_LO: usize = 0x038;
    /// RW (while disabled): BAR2 offset of the Medium bounce area, high half.
    pub const RX_BOUNCE_HI: usize = 0x03C;
    /// RO: BAR0 offset of the command queue ring.
    pub const SQ_BASE: usize = 0x040;
    /// RO: command queue entries.
    pub const SQ_SIZE: usize = 0x044;
    /// RO: next slot the board will read (consumer index).
    pub const SQ_HEAD: usize = 0x048;
    /// RO: the last value written to [`DOORBELL`] (producer index).
    pub const SQ_TAIL: usize = 0x04C;
    /// RO: BAR0 offset of the completion queue ring.
    pub const CQ_BASE: usize = 0x050;
    /// RO: completion queue entries.
    pub const CQ_SIZE: usize = 0x054;
    /// RW: next entry the host will read; writing it frees entries.
    pub const CQ_HEAD: usize = 0x058;
    /// RO: next entry the board will write.
    pub const CQ_TAIL: usize = 0x05C;
    /// RO: BAR0 offset of the receive queue ring.
    pub const RQ_BASE: usize = 0x060;
    /// RO: receive queue entries.
    pub const RQ_SIZE: usize = 0x064;
    /// RW: next entry the host will read; writing it frees entries.
    pub const RQ_HEAD: usize = 0x068;
    /// RO: next entry the board will write.
    pub const RQ_TAIL: usize = 0x06C;
    /// WO: the new command queue tail; the board reads slots up to it.
    pub const DOORBELL: usize = 0x080;
    /// RW: control bits, see [`super::ctrl`].
    pub const CTRL: usize = 0x100;
    /// RO: status bits, see [`super::status`].
    pub const STATUS: usize = 0x104;
    /// W1C: device error bits, see [`super::err`].
    pub const ERR_STATUS: usize = 0x108;
    /// RO: the value behind the most recent device error.
    pub const ERR_INFO: usize = 0x10C;
    /// RW: interrupt mask, a set bit masks the source (see [`super::irq`]).
    pub const IRQ_MASK: usize = 0x110;
    /// W1C: pending interrupt sources (see [`super::irq`]).
    pub const IRQ_STATUS: usize = 0x114;
    /// RO 64-bit: commands executed (completed, with or without error).
    pub const CNT_COMMANDS: usize = 0x200;
    /// RO 64-bit: packets sent on all links.
    pub const CNT_PACKETS_TX: usize = 0x208;
    /// RO 64-bit: packets received on all links.
    pub const CNT_PACKETS_RX: usize = 0x210;
    /// RO 64-bit: payload bytes sent.
    pub const CNT_BYTES_TX: usize = 0x218;
    /// RO 64-bit: payload bytes received.
    pub const CNT_BYTES_RX: usize = 0x220;
    /// RO 64-bit: packets retransmitted.
    pub const CNT_RETRANSMITS: usize = 0x228;
    /// RO 64-bit: core clock cycles the command queue was stalled.
    pub const CNT_STALLS: usize = 0x230;
    /// RO 64-bit: error completions written.
    pub const CNT_ERRORS: usize = 0x238;
    /// RO 64-bit: microseconds since the board came out of reset; a running
    /// board advances it at least every millisecond (version 1.1).
    pub const UPTIME_LO: usize = 0x240;
    /// RO: bits 63:32 of `UPTIME`.
    pub const UPTIME_HI: usize = 0x244;
    /// Base of the per-port link block; port `p` is at `LINK_BASE + p * LINK_STRIDE`.
    pub const LINK_BASE: usize = 0x300;
    /// Distance between two ports' link blocks.
    pub const LINK_STRIDE: usize = 0x20;
    /// RO, within a link block: link status bits (see [`super::link`]).
    pub const LINK_STATUS: usize = 0x00;
    /// RO, within a link block: node id of the peer on this port, bits 15:0.
    pub const LINK_PEER: usize = 0x04;
    /// RO, within a link block: frames dropped for a bad CRC.
    pub const LINK_CRC_ERRORS: usize = 0x08;
    /// RO, within a link block: times the link retrained.
    pub const LINK_RETRAINS: usize = 0x0C;
    /// BAR0 offset of the command queue ring ([`super::SQ_ENTRIES`] × 64 bytes).
    pub const SQ_RING: usize = 0x1000;
    /// BAR0 offset of the completion ring ([`super::CQ_ENTRIES`] × 32 bytes).
    pub const CQ_RING: usize = 0x5000;
    /// BAR0 offset of the receive ring ([`super::RQ_ENTRIES`] × 128 bytes).
    pub const RQ_RING: usize = 0x7000;

    /// BAR0 offset of link port `port`'s register `reg` (a `LINK_*` offset).
    pub const fn link(port: usize, reg: usize) -> usize {
        LINK_BASE + port * LINK_STRIDE + reg
    }
}

/// Bits of the [`regs::CAPS`] register.
pub mod caps {
    /// Local addresses may be host IOVAs (the board has a DMA engine).
    pub const HOST_DMA: u32 = 1 << 0;
    /// Handlers at and above `handlers::FIRST_COMPUTE` run on a compute core.
    pub const COMPUTE: u32 = 1 << 1;
    /// MSI interrupts are wired (see [`super::regs::IRQ_MASK`]).
    pub const MSI: u32 = 1 << 2;
    /// Shift of the 4-bit link port count field.
    pub const PORTS_SHIFT: u32 = 8;
    /// Mask of the link port count field, after shifting.
    pub const PORTS_MASK: u32 = 0xF;
}

/// Bits of the [`regs::CTRL`] register.
pub mod ctrl {
    /// Set: the core reads commands and serves the links.
    pub const ENABLE: u32 = 1 << 0;
    /// Write 1: reset queues, counters, errors; reads 1 until done.
    pub const RESET: u32 = 1 << 1;
}

/// Bits of the [`regs::STATUS`] register.
pub mod status {
    /// The core is enabled and configured.
    pub const READY: u32 = 1 << 0;
    /// A reset is in progress.
    pub const RESET_BUSY: u32 = 1 << 1;
    /// `SQ_HEAD == SQ_TAIL` and nothing is in flight.
    pub const IDLE: u32 = 1 << 2;
    /// The command queue is stalled on a full completion queue.
    pub const CQ_STALL: u32 = 1 << 3;
    /// Reception is stalled on a full receive queue.
    pub const RQ_STALL: u32 = 1 << 4;
    /// Some [`super::regs::ERR_STATUS`] bit is set.
    pub const ERROR: u32 = 1 << 5;
}

/// Bits of the [`regs::ERR_STATUS`] register (write 1 to clear).
pub mod err {
    /// A doorbell value was not below `SQ_SIZE`; it was ignored.
    pub const DOORBELL_RANGE: u32 = 1 << 0;
    /// A configuration register was written while enabled; ignored.
    pub const CONFIG_LOCKED: u32 = 1 << 1;
    /// `ENABLE` was set with an invalid configuration; it stayed clear.
    pub const CONFIG_INVALID: u32 = 1 << 2;
    /// An uncorrectable DDR ECC error.
    pub const DDR_ECC: u32 = 1 << 3;
    /// Link port 0 went down.
    pub const LINK0_DOWN: u32 = 1 << 4;
    /// Link port 1 went down.
    pub const LINK1_DOWN: u32 = 1 << 5;
    /// A peer did not acknowledge within the retransmit limit.
    pub const PEER_TIMEOUT: u32 = 1 << 6;
    /// A host DMA transfer failed (completer abort or unsupported request).
    pub const DMA: u32 = 1 << 7;
    /// A malformed packet arrived on a link and was dropped.
    pub const BAD_PACKET: u32 = 1 << 8;
    /// (1.2) The compute core dropped a request to one of its handlers that
    /// it could not run and could not answer; `ERR_INFO` says which
    /// ([`crate::compute::Rejected`]).
    pub const COMPUTE: u32 = 1 << 9;
    /// An internal consistency check failed; reset the board.
    pub const INTERNAL: u32 = 1 << 31;
}

/// Bits of [`regs::IRQ_MASK`] and [`regs::IRQ_STATUS`].
pub mod irq {
    /// A completion entry was written.
    pub const CQ: u32 = 1 << 0;
    /// A receive entry was written.
    pub const RQ: u32 = 1 << 1;
    /// An [`super::regs::ERR_STATUS`] bit was set.
    pub const ERROR: u32 = 1 << 2;
}

/// Bits of a link block's [`regs::LINK_STATUS`] register.
pub mod link {
    /// The link is trained and passing traffic.
    pub const UP: u32 = 1 << 0;
    /// The port has a module/cable present.
    pub const PRESENT: u32 = 1 << 1;
    /// Shift of the 8-bit line rate field (Gbit/s).
    pub const RATE_SHIFT: u32 = 8;
}

// The register block, the link blocks and the three rings tile BAR0 without
// overlap: checked when the crate compiles.
const _: () = {
    assert!(regs::LINK_BASE + LINK_PORTS * regs::LINK_STRIDE <= regs::SQ_RING);
    assert!(regs::SQ_RING + SQ_ENTRIES as usize * SLOT_BYTES == regs::CQ_RING);
    assert!(regs::CQ_RING + CQ_ENTRIES as usize * COMPLETION_BYTES == regs::RQ_RING);
    assert!(regs::RQ_RING + RQ_ENTRIES as usize * RX_ENTRY_BYTES <= BAR0_SIZE);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_reads_as_fshm() {
        assert_eq!(MAGIC.to_le_bytes(), *b"FSHM");
        assert_eq!(MAGIC, 0x4D48_5346);
        assert_eq!(VERSION, 0x0001_0002);
    }

    #[test]
    fn link_blocks_are_addressed_per_port() {
        assert_eq!(regs::link(1, regs::LINK_PEER), 0x324);
    }
}
