//! Descriptors to queue slots and back: the head slot and its
//! continuation, and the decode that checks every field a board checks.

use super::*;

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
    if !remote.is_multiple_of(width.bytes() as u64) {
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
