//! The 64-byte command descriptor (`spec/registers.md`, "Command descriptor").

use super::error::CmdError;
use super::{flags, opcode};
use crate::amo::{AmoOp, AmoWidth};
use crate::types::{Category, Direction, MAX_ARGS, MAX_LONG, MAX_MEDIUM, NodeId, handlers};

/// Size of one command queue slot in bytes.
pub const SLOT_BYTES: usize = 64;
/// Most payload bytes a Put carries inline (bytes 32..64 of its slot).
pub const MAX_INLINE: usize = 32;
/// AM arguments carried by the head slot; more need a continuation slot.
pub const INLINE_ARGS: usize = 8;
/// AM arguments carried by a continuation slot.
pub const CHAIN_ARGS: usize = MAX_ARGS - INLINE_ARGS;
/// Largest Put or Get length in bytes (1 GiB); the board segments longer
/// transfers into packets itself, the host never needs to.
pub const MAX_TRANSFER: u32 = 1 << 30;

/// Fields every descriptor has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Common {
    /// Host cookie echoed in the completion entry.
    pub tag: u32,
    /// Write a completion entry on success ([`flags::COMPLETION`]).
    pub completion: bool,
    /// Start only after every earlier command completed ([`flags::FENCE_BEFORE`]).
    pub fence_before: bool,
}

impl Common {
    fn flag_bits(&self) -> u8 {
        let mut f = 0;
        if self.completion {
            f |= flags::COMPLETION;
        }
        if self.fence_before {
            f |= flags::FENCE_BEFORE;
        }
        f
    }

    fn from_bytes(b: &[u8]) -> Common {
        Common {
            tag: u32_at(b, 4),
            completion: b[1] & flags::COMPLETION != 0,
            fence_before: b[1] & flags::FENCE_BEFORE != 0,
        }
    }
}

/// Local memory a command reads from or writes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Local {
    /// An offset from the start of this board's segment (BAR2 offset
    /// `SEG_BASE + offset`).
    Segment(u64),
    /// A host I/O virtual address the board reaches by DMA
    /// ([`flags::LOCAL_IOVA`]; needs `caps::HOST_DMA`).
    Iova(u64),
}

impl Local {
    /// The address or offset, whichever kind it is.
    pub fn addr(self) -> u64 {
        match self {
            Local::Segment(a) | Local::Iova(a) => a,
        }
    }

    fn flag(self) -> u8 {
        match self {
            Local::Segment(_) => 0,
            Local::Iova(_) => flags::LOCAL_IOVA,
        }
    }

    fn from_bytes(b: &[u8]) -> Local {
        let a = u64_at(b, 16);
        if b[1] & flags::LOCAL_IOVA != 0 {
            Local::Iova(a)
        } else {
            Local::Segment(a)
        }
    }
}

/// Up to [`MAX_INLINE`] bytes carried in a Put descriptor itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Inline {
    len: u8,
    bytes: [u8; MAX_INLINE],
}

impl Inline {
    /// Inline data holding `data`; fails with [`CmdError::LengthTooLong`]
    /// beyond [`MAX_INLINE`] bytes.
    pub fn new(data: &[u8]) -> Result<Inline, CmdError> {
        if data.len() > MAX_INLINE {
            return Err(CmdError::LengthTooLong {
                opcode: opcode::PUT,
                len: u32::try_from(data.len()).unwrap_or(u32::MAX),
                max: MAX_INLINE as u32,
            });
        }
        let mut bytes = [0; MAX_INLINE];
        bytes[..data.len()].copy_from_slice(data);
        Ok(Inline {
            len: data.len() as u8,
            bytes,
        })
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The 0..=16 32-bit arguments of an active message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Args {
    len: u8,
    vals: [u32; MAX_ARGS],
}

impl Args {
    /// Arguments holding `args`; fails with [`CmdError::TooManyArgs`] beyond
    /// [`MAX_ARGS`].
    pub fn new(args: &[u32]) -> Result<Args, CmdError> {
        if args.len() > MAX_ARGS {
            return Err(CmdError::TooManyArgs(
                u8::try_from(args.len()).unwrap_or(u8::MAX),
            ));
        }
        let mut vals = [0; MAX_ARGS];
        vals[..args.len()].copy_from_slice(args);
        Ok(Args {
            len: args.len() as u8,
            vals,
        })
    }

    /// The arguments.
    pub fn as_slice(&self) -> &[u32] {
        &self.vals[..self.len as usize]
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether they need a continuation slot (more than [`INLINE_ARGS`]).
    pub fn chained(&self) -> bool {
        self.len() > INLINE_ARGS
    }
}

/// Where a Put's bytes come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PutSource {
    /// `len` bytes at a local address.
    Local {
        /// Where the bytes are.
        addr: Local,
        /// How many (at most [`MAX_TRANSFER`]).
        len: u32,
    },
    /// Bytes inside the descriptor ([`flags::INLINE`]).
    Inline(Inline),
}

/// The category-specific part of an AM descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AmBody {
    /// Arguments only.
    Short,
    /// A payload of `len` bytes (at most `MAX_MEDIUM`) read from `local`,
    /// delivered to the target handler in a bounce buffer.
    Medium {
        /// Where the payload is.
        local: Local,
        /// Its length.
        len: u32,
    },
    /// A payload of `len` bytes (at most `MAX_LONG`) read from `local` and
    /// written at `remote` in the target's segment before its handler runs.
    Long {
        /// Where the payload is.
        local: Local,
        /// Its length.
        len: u32,
        /// Target segment offset.
        remote: u64,
    },
}

impl AmBody {
    /// The AM category.
    pub fn category(&self) -> Category {
        match self {
            AmBody::Short => Category::Short,
            AmBody::Medium { .. } => Category::Medium,
            AmBody::Long { .. } => Category::Long,
        }
    }
}

/// One command, as a host submits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Descriptor {
    /// Does nothing; completes at once.
    Nop {
        /// Tag and flags.
        common: Common,
    },
    /// Every earlier command completes before any later one starts; its
    /// completion (if requested) is written at that point.
    Fence {
        /// Tag and flags.
        common: Common,
    },
    /// Writes bytes into `target`'s segment at `remote`; complete when the
    /// target acknowledged them.
    Put {
        /// Tag and flags.
        common: Common,
        /// Destination node.
        target: NodeId,
        /// Destination segment offset.
        remote: u64,
        /// Where the bytes come from.
        source: PutSource,
    },
    /// Reads `len` bytes at `remote` in `target`'s segment into `local`;
    /// complete when they have landed.
    Get {
        /// Tag and flags.
        common: Common,
        /// Source node.
        target: NodeId,
        /// Source segment offset.
        remote: u64,
        /// Where the bytes go.
        local: Local,
        /// How many (at most [`MAX_TRANSFER`]).
        len: u32,
    },
    /// Sends an active message; complete when its payload has been read
    /// (the local source may be reused).
    Am {
        /// Tag and flags.
        common: Common,
        /// Destination node (for a reply: the requester).
        target: NodeId,
        /// Request or reply.
        direction: Direction,
        /// Handler index (1..=255).
        handler: u8,
        /// Arguments.
        args: Args,
        /// Category and payload.
        body: AmBody,
    },
    /// A remote atomic on the `width` word at `remote` in `target`'s
    /// segment; the completion carries the fetched value.
    Amo {
        /// Tag and flags.
        common: Common,
        /// Node holding the word.
        target: NodeId,
        /// The operation.
        op: AmoOp,
        /// 32 or 64 bits.
        width: AmoWidth,
        /// Segment offset of the word, aligned to `width`.
        remote: u64,
        /// Operand (0 for `Fetch`); for W32 the upper 32 bits are 0.
        operand: u64,
        /// Compare value of `CompareSwap` (0 for every other op).
        compare: u64,
    },
}

impl Descriptor {
    /// Tag and flags.
    pub fn common(&self) -> &Common {
        match self {
            Descriptor::Nop { common }
            | Descriptor::Fence { common }
            | Descriptor::Put { common, .. }
            | Descriptor::Get { common, .. }
            | Descriptor::Am { common, .. }
            | Descriptor::Amo { common, .. } => common,
        }
    }

    /// The opcode of its (head) slot.
    pub fn opcode(&self) -> u8 {
        match self {
            Descriptor::Nop { .. } => opcode::NOP,
            Descriptor::Fence { .. } => opcode::FENCE,
            Descriptor::Put { .. } => opcode::PUT,
            Descriptor::Get { .. } => opcode::GET,
            Descriptor::Am {
                direction, body, ..
            } => am_opcode(*direction, body.category()),
            Descriptor::Amo { .. } => opcode::AMO,
        }
    }

    /// Command queue slots it occupies: 2 for an AM with more than
    /// [`INLINE_ARGS`] arguments, else 1.
    pub fn slots(&self) -> usize {
        match self {
            Descriptor::Am { args, .. } if args.chained() => 2,
            _ => 1,
        }
    }

    /// Checks that it encodes to bytes [`decode`] accepts (lengths within
    /// limits, aligned atomics, operands that fit, a valid handler...).
    pub fn validate(&self) -> Result<(), CmdError> {
        let e = encode_slots(self);
        decode(&e.to_vec()).map(|_| ())
    }
}

/// A descriptor's encoding: one slot, or two for a chained AM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Encoded {
    slots: [[u8; SLOT_BYTES]; 2],
    count: u8,
}

impl Encoded {
    /// The slots, in queue order (the continuation, if any, goes in the
    /// slot after the head, wrapping at the end of the ring).
    pub fn as_slots(&self) -> &[[u8; SLOT_BYTES]] {
        &self.slots[..self.count as usize]
    }

    /// The slots concatenated.
    pub fn to_vec(&self) -> Vec<u8> {
        self.as_slots().concat()
    }
}

fn am_opcode(direction: Direction, category: Category) -> u8 {
    let reply = match direction {
        Direction::Request => 0,
        Direction::Reply => 1,
    };
    let cat = match category {
        Category::Short => 0,
        Category::Medium => 1,
        Category::Long => 2,
    };
    opcode::AM | reply << 3 | cat
}

fn am_kind(op: u8) -> Option<(Direction, Category)> {
    let direction = match op & 0xF8 {
        0x10 => Direction::Request,
        0x18 => Direction::Reply,
        _ => return None,
    };
    let category = match op & 0x07 {
        0 => Category::Short,
        1 => Category::Medium,
        2 => Category::Long,
        _ => return None,
    };
    Some((direction, category))
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut x = [0; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(x)
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

pub(super) fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub(super) fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Fails with [`CmdError::ReservedNonZero`] at the first non-zero byte of
/// `b[from..to]`; `base` is added to the reported offset.
pub(super) fn zero(b: &[u8], from: usize, to: usize, base: usize) -> Result<(), CmdError> {
    match b[from..to].iter().position(|&v| v != 0) {
        Some(i) => Err(CmdError::ReservedNonZero {
            offset: base + from + i,
            value: b[from + i],
        }),
        None => Ok(()),
    }
}

fn header(op: u8, flag_bits: u8, target: NodeId, tag: u32) -> [u8; SLOT_BYTES] {
    let mut b = [0; SLOT_BYTES];
    b[0] = op;
    b[1] = flag_bits;
    b[2..4].copy_from_slice(&target.to_le_bytes());
    put_u32(&mut b, 4, tag);
    b
}

/// Encodes a descriptor's head slot (with [`flags::CHAIN`] set if it needs a
/// continuation; use [`encode_slots`] to get both).
///
/// Encoding packs the fields as they are: a descriptor that fails
/// [`Descriptor::validate`] encodes to bytes a board rejects.
pub fn encode(d: &Descriptor) -> [u8; SLOT_BYTES] {
    encode_slots(d).slots[0]
}

/// Encodes a descriptor into its one or two slots.
pub fn encode_slots(d: &Descriptor) -> Encoded {
    let c = d.common();
    let f = c.flag_bits();
    let mut cont = None;
    let head = match *d {
        Descriptor::Nop { .. } | Descriptor::Fence { .. } => header(d.opcode(), f, 0, c.tag),
        Descriptor::Put {
            target,
            remote,
            source,
            ..
        } => match source {
            PutSource::Local { addr, len } => {
                let mut b = header(opcode::PUT, f | addr.flag(), target, c.tag);
                put_u32(&mut b, 12, len);
                put_u64(&mut b, 16, addr.addr());
                put_u64(&mut b, 24, remote);
                b
            }
            PutSource::Inline(data) => {
                let mut b = header(opcode::PUT, f | flags::INLINE, target, c.tag);
                put_u32(&mut b, 12, data.len() as u32);
                put_u64(&mut b, 24, remote);
                b[32..32 + data.len()].copy_from_slice(data.as_slice());
                b
            }
        },
        Descriptor::Get {
            target,
            remote,
            local,
            len,
            ..
        } => {
            let mut b = header(opcode::GET, f | local.flag(), target, c.tag);
            put_u32(&mut b, 12, len);
            put_u64(&mut b, 16, local.addr());
            put_u64(&mut b, 24, remote);
            b
        }
        Descriptor::Am {
            target,
            handler,
            args,
            body,
            ..
        } => {
            let mut fl = f;
            if args.chained() {
                fl |= flags::CHAIN;
            }
            let (local, len, remote) = match body {
                AmBody::Short => (None, 0, 0),
                AmBody::Medium { local, len } => (Some(local), len, 0),
                AmBody::Long { local, len, remote } => (Some(local), len, remote),
            };
            if let Some(l) = local {
                fl |= l.flag();
            }
            let mut b = header(d.opcode(), fl, target, c.tag);
            b[8] = handler;
            b[9] = args.len;
            put_u32(&mut b, 12, len);
            put_u64(&mut b, 16, local.map_or(0, Local::addr));
            put_u64(&mut b, 24, remote);
            let vals = args.as_slice();
            for (i, &v) in vals.iter().take(INLINE_ARGS).enumerate() {
                put_u32(&mut b, 32 + 4 * i, v);
            }
            if args.chained() {
                let mut n = header(opcode::AM_CONTINUATION, 0, 0, c.tag);
                for (i, &v) in vals[INLINE_ARGS..].iter().enumerate() {
                    put_u32(&mut n, 32 + 4 * i, v);
                }
                cont = Some(n);
            }
            b
        }
        Descriptor::Amo {
            target,
            op,
            width,
            remote,
            operand,
            compare,
            ..
        } => {
            let mut b = header(opcode::AMO, f, target, c.tag);
            b[8] = op.code();
            b[9] = width.bytes() as u8;
            put_u64(&mut b, 24, remote);
            put_u64(&mut b, 32, operand);
            put_u64(&mut b, 40, compare);
            b
        }
    };
    match cont {
        Some(n) => Encoded {
            slots: [head, n],
            count: 2,
        },
        None => Encoded {
            slots: [head, [0; SLOT_BYTES]],
            count: 1,
        },
    }
}

/// How many slots the descriptor whose head slot is `head` occupies (reads
/// only its opcode and flags): 2 for an AM with [`flags::CHAIN`], else 1.
pub fn slot_count(head: &[u8]) -> Result<usize, CmdError> {
    if head.len() < SLOT_BYTES {
        return Err(CmdError::Truncated {
            needed: SLOT_BYTES,
            got: head.len(),
        });
    }
    Ok(
        if am_kind(head[0]).is_some() && head[1] & flags::CHAIN != 0 {
            2
        } else {
            1
        },
    )
}

/// Decodes the descriptor that starts at `bytes[0]`; a chained AM's
/// continuation is `bytes[64..128]`. Bytes after the descriptor are ignored.
pub fn decode(bytes: &[u8]) -> Result<Descriptor, CmdError> {
    let n = slot_count(bytes)?;
    let next = if n == 2 {
        Some(
            bytes
                .get(SLOT_BYTES..2 * SLOT_BYTES)
                .ok_or(CmdError::Truncated {
                    needed: 2 * SLOT_BYTES,
                    got: bytes.len(),
                })?,
        )
    } else {
        None
    };
    decode_chain(&bytes[..SLOT_BYTES], next)
}

/// Decodes a descriptor whose head slot is `head` and whose continuation,
/// if it has one, is `next` (the two need not be adjacent in memory: the
/// continuation of the ring's last slot is slot 0). `next` is ignored when
/// the head has no CHAIN flag.
pub fn decode_chain(head: &[u8], next: Option<&[u8]>) -> Result<Descriptor, CmdError> {
    if head.len() < SLOT_BYTES {
        return Err(CmdError::Truncated {
            needed: SLOT_BYTES,
            got: head.len(),
        });
    }
    let b = &head[..SLOT_BYTES];
    let op = b[0];
    let allowed = match op {
        opcode::NOP | opcode::FENCE | opcode::AMO => flags::COMPLETION | flags::FENCE_BEFORE,
        opcode::PUT => flags::COMPLETION | flags::FENCE_BEFORE | flags::LOCAL_IOVA | flags::INLINE,
        opcode::GET => flags::COMPLETION | flags::FENCE_BEFORE | flags::LOCAL_IOVA,
        opcode::AM_CONTINUATION => return Err(CmdError::OrphanContinuation),
        _ => match am_kind(op) {
            Some((_, Category::Short)) => flags::COMPLETION | flags::FENCE_BEFORE | flags::CHAIN,
            Some(_) => flags::COMPLETION | flags::FENCE_BEFORE | flags::LOCAL_IOVA | flags::CHAIN,
            None => return Err(CmdError::UnknownOpcode(op)),
        },
    };
    let bad = b[1] & !allowed;
    if bad != 0 {
        return Err(CmdError::BadFlags {
            opcode: op,
            flags: bad,
        });
    }
    let common = Common::from_bytes(b);
    let target = u16::from_le_bytes([b[2], b[3]]);
    match op {
        opcode::NOP | opcode::FENCE => {
            zero(b, 2, 4, 0)?;
            zero(b, 8, SLOT_BYTES, 0)?;
            Ok(if op == opcode::NOP {
                Descriptor::Nop { common }
            } else {
                Descriptor::Fence { common }
            })
        }
        opcode::PUT | opcode::GET => {
            zero(b, 8, 12, 0)?;
            let len = u32_at(b, 12);
            let remote = u64_at(b, 24);
            if b[1] & flags::INLINE != 0 {
                if b[1] & flags::LOCAL_IOVA != 0 {
                    return Err(CmdError::BadFlags {
                        opcode: op,
                        flags: flags::LOCAL_IOVA,
                    });
                }
                if len as usize > MAX_INLINE {
                    return Err(CmdError::LengthTooLong {
                        opcode: op,
                        len,
                        max: MAX_INLINE as u32,
                    });
                }
                zero(b, 16, 24, 0)?;
                let end = 32 + len as usize;
                zero(b, end, SLOT_BYTES, 0)?;
                let data = Inline::new(&b[32..end])?;
                return Ok(Descriptor::Put {
                    common,
                    target,
                    remote,
                    source: PutSource::Inline(data),
                });
            }
            if len > MAX_TRANSFER {
                return Err(CmdError::LengthTooLong {
                    opcode: op,
                    len,
                    max: MAX_TRANSFER,
                });
            }
            zero(b, 32, SLOT_BYTES, 0)?;
            let local = Local::from_bytes(b);
            Ok(if op == opcode::PUT {
                Descriptor::Put {
                    common,
                    target,
                    remote,
                    source: PutSource::Local { addr: local, len },
                }
            } else {
                Descriptor::Get {
                    common,
                    target,
                    remote,
                    local,
                    len,
                }
            })
        }
        opcode::AMO => decode_amo(b, common, target),
        _ => decode_am(b, next, common, target),
    }
}

fn decode_amo(b: &[u8], common: Common, target: NodeId) -> Result<Descriptor, CmdError> {
    let op = AmoOp::from_code(b[8]).ok_or(CmdError::BadAmoOp(b[8]))?;
    let width = AmoWidth::from_bytes(b[9]).ok_or(CmdError::BadAmoWidth(b[9]))?;
    zero(b, 10, 24, 0)?;
    let remote = u64_at(b, 24);
    if remote % width.bytes() as u64 != 0 {
        return Err(CmdError::Misaligned {
            offset: remote,
            align: width.bytes() as u8,
        });
    }
    if op == AmoOp::Fetch {
        zero(b, 32, 40, 0)?;
    }
    if op != AmoOp::CompareSwap {
        zero(b, 40, 48, 0)?;
    }
    zero(b, 48, SLOT_BYTES, 0)?;
    let operand = u64_at(b, 32);
    let compare = u64_at(b, 40);
    for (offset, value) in [(32, operand), (40, compare)] {
        if value & !width.mask() != 0 {
            return Err(CmdError::OperandTooWide { offset, value });
        }
    }
    Ok(Descriptor::Amo {
        common,
        target,
        op,
        width,
        remote,
        operand,
        compare,
    })
}

fn decode_am(
    b: &[u8],
    next: Option<&[u8]>,
    common: Common,
    target: NodeId,
) -> Result<Descriptor, CmdError> {
    let Some((direction, category)) = am_kind(b[0]) else {
        return Err(CmdError::UnknownOpcode(b[0]));
    };
    let handler = b[8];
    if handler == handlers::INVALID {
        return Err(CmdError::InvalidHandler(handler));
    }
    let nargs = b[9];
    if nargs as usize > MAX_ARGS {
        return Err(CmdError::TooManyArgs(nargs));
    }
    let chained = b[1] & flags::CHAIN != 0;
    if nargs as usize > INLINE_ARGS && !chained {
        return Err(CmdError::ChainMissing { nargs });
    }
    if nargs as usize <= INLINE_ARGS && chained {
        return Err(CmdError::ChainUnexpected { nargs });
    }
    zero(b, 10, 12, 0)?;
    let len = u32_at(b, 12);
    let body = match category {
        Category::Short => {
            if len != 0 {
                return Err(CmdError::ShortWithPayload(len));
            }
            zero(b, 16, 32, 0)?;
            AmBody::Short
        }
        Category::Medium | Category::Long => {
            let max = if category == Category::Medium {
                MAX_MEDIUM
            } else {
                MAX_LONG
            } as u32;
            if len > max {
                return Err(CmdError::LengthTooLong {
                    opcode: b[0],
                    len,
                    max,
                });
            }
            let local = Local::from_bytes(b);
            if category == Category::Medium {
                zero(b, 24, 32, 0)?;
                AmBody::Medium { local, len }
            } else {
                AmBody::Long {
                    local,
                    len,
                    remote: u64_at(b, 24),
                }
            }
        }
    };
    let mut vals = [0u32; MAX_ARGS];
    let in_head = (nargs as usize).min(INLINE_ARGS);
    for (i, v) in vals.iter_mut().enumerate().take(in_head) {
        *v = u32_at(b, 32 + 4 * i);
    }
    zero(b, 32 + 4 * in_head, SLOT_BYTES, 0)?;
    if chained {
        let n = next.ok_or(CmdError::Truncated {
            needed: 2 * SLOT_BYTES,
            got: SLOT_BYTES,
        })?;
        if n.len() < SLOT_BYTES {
            return Err(CmdError::Truncated {
                needed: 2 * SLOT_BYTES,
                got: SLOT_BYTES + n.len(),
            });
        }
        if n[0] != opcode::AM_CONTINUATION {
            return Err(CmdError::BadContinuation { opcode: n[0] });
        }
        if n[1] != 0 {
            return Err(CmdError::BadFlags {
                opcode: opcode::AM_CONTINUATION,
                flags: n[1],
            });
        }
        zero(n, 2, 4, SLOT_BYTES)?;
        let tag = u32_at(n, 4);
        if tag != common.tag {
            return Err(CmdError::ContinuationTagMismatch {
                head: common.tag,
                continuation: tag,
            });
        }
        zero(n, 8, 32, SLOT_BYTES)?;
        let rest = nargs as usize - INLINE_ARGS;
        for i in 0..rest {
            vals[INLINE_ARGS + i] = u32_at(n, 32 + 4 * i);
        }
        zero(n, 32 + 4 * rest, SLOT_BYTES, SLOT_BYTES)?;
    }
    let args = Args::new(&vals[..nargs as usize])?;
    Ok(Descriptor::Am {
        common,
        target,
        direction,
        handler,
        args,
        body,
    })
}
