//! The worked examples of `spec/registers.md` and `spec/wire.md`, read
//! from the specs' text, for every implementation that checks itself
//! against them (this crate's encoders, the RTL core in `hw/`).
//!
//! - `registers.md` gives named ` ```hex ` blocks: a `# example: NAME` line,
//!   then rows of an optional `NN:` offset and hex byte pairs
//!   ([`register_examples`]).
//! - `wire.md` gives ` ```packet ` blocks (the fields of a [`Packet`], one
//!   `key = value` a line) each followed by a ` ```hex ` block of its exact
//!   bytes, with `#` comments ([`wire_examples`]).
//!
//! The functions take the text (no I/O here) and report malformed examples
//! as errors naming what is wrong.

use crate::types::{Category, Direction};
use crate::wire::{Packet, PacketType};
use std::collections::{BTreeMap, HashMap};

/// The fenced blocks of a markdown text: (info string, body).
pub fn fenced_blocks(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    open = Some((info.trim().to_string(), String::new()));
                }
            }
            Some((info, mut body)) => {
                if trimmed.starts_with("```") {
                    blocks.push((info, body));
                } else {
                    body.push_str(line);
                    body.push('\n');
                    open = Some((info, body));
                }
            }
        }
    }
    match open {
        Some((info, _)) => Err(format!("unterminated ```{info} block")),
        None => Ok(blocks),
    }
}

fn hex_byte(t: &str, what: &str) -> Result<u8, String> {
    if t.len() != 2 {
        return Err(format!("hex token {t:?} in {what} is not one byte"));
    }
    u8::from_str_radix(t, 16).map_err(|_| format!("bad hex byte {t:?} in {what}"))
}

/// The named hex examples of `spec/registers.md`: name -> bytes.
pub fn register_examples(text: &str) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    for (info, body) in fenced_blocks(text)? {
        if info != "hex" {
            continue;
        }
        let mut name: Option<String> = None;
        let mut bytes = Vec::new();
        for l in body.lines() {
            let (data, comment) = match l.split_once('#') {
                Some((d, c)) => (d, Some(c.trim())),
                None => (l, None),
            };
            if let Some(n) = comment.and_then(|c| c.strip_prefix("example:")) {
                name = Some(n.trim().to_string());
            }
            let what = name.as_deref().unwrap_or("an unnamed example").to_string();
            let data = match data.split_once(':') {
                Some((off, rest)) => {
                    let off = usize::from_str_radix(off.trim(), 16)
                        .map_err(|_| format!("offset prefix {off:?} in {what} is not hex"))?;
                    if off != bytes.len() {
                        return Err(format!("offset prefix {off:#x} out of step in {what}"));
                    }
                    rest
                }
                None => data,
            };
            for t in data.split_whitespace() {
                bytes.push(hex_byte(t, &what)?);
            }
        }
        let name = name.ok_or("a hex block lacks its `# example: NAME` line")?;
        if out.insert(name.clone(), bytes).is_some() {
            return Err(format!("example {name} appears twice"));
        }
    }
    Ok(out)
}

fn parse_int(s: &str) -> Result<u64, String> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("bad integer {s:?}"))
}

fn parse_type(s: &str) -> Result<PacketType, String> {
    use Category::*;
    use Direction::*;
    let am = |category, direction| PacketType::Am {
        category,
        direction,
    };
    Ok(match s {
        "am-short-request" => am(Short, Request),
        "am-medium-request" => am(Medium, Request),
        "am-long-request" => am(Long, Request),
        "am-short-reply" => am(Short, Reply),
        "am-medium-reply" => am(Medium, Reply),
        "am-long-reply" => am(Long, Reply),
        "ack" => PacketType::Ack,
        "nack" => PacketType::Nack,
        _ => return Err(format!("unknown packet type {s:?}")),
    })
}

fn list(s: &str) -> Result<&str, String> {
    s.trim()
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(|| format!("expected [..], got {s:?}"))
}

/// Parses a ` ```packet ` block into the packet it states.
pub fn parse_packet_block(body: &str) -> Result<Packet, String> {
    let mut fields = HashMap::new();
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| format!("expected key = value: {line:?}"))?;
        if fields.insert(k.trim(), v.trim()).is_some() {
            return Err(format!("duplicate key {:?}", k.trim()));
        }
    }
    let mut take = |k: &str| {
        fields
            .remove(k)
            .ok_or_else(|| format!("packet block lacks {k:?}"))
    };
    let int = |v: &str| parse_int(v);
    let p = Packet {
        ptype: parse_type(take("type")?)?,
        flags: int(take("flags")?)? as u8,
        handler: int(take("handler")?)? as u8,
        src: int(take("src")?)? as u16,
        dst: int(take("dst")?)? as u16,
        seq: int(take("seq")?)? as u32,
        ack: int(take("ack")?)? as u32,
        frag_offset: int(take("frag_offset")?)? as u32,
        total_len: int(take("total_len")?)? as u32,
        offset: int(take("offset")?)?,
        args: list(take("args")?)?
            .split(',')
            .filter(|a| !a.trim().is_empty())
            .map(|a| parse_int(a).map(|v| v as u32))
            .collect::<Result<_, _>>()?,
        payload: list(take("payload")?)?
            .split_whitespace()
            .map(|t| hex_byte(t, "a payload"))
            .collect::<Result<_, _>>()?,
    };
    match fields.keys().next() {
        Some(k) => Err(format!("unknown key {k:?} in a packet block")),
        None => Ok(p),
    }
}

/// Parses a ` ```hex ` block of `wire.md` (hex bytes, `#` comments).
pub fn parse_hex_block(body: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for l in body.lines() {
        for t in l.split('#').next().unwrap_or("").split_whitespace() {
            out.push(hex_byte(t, "a hex block")?);
        }
    }
    Ok(out)
}

/// The (packet, exact bytes) examples of `spec/wire.md`, in order.
pub fn wire_examples(text: &str) -> Result<Vec<(Packet, Vec<u8>)>, String> {
    let blocks = fenced_blocks(text)?;
    let mut out = Vec::new();
    let mut iter = blocks.iter();
    while let Some((info, body)) = iter.next() {
        match info.as_str() {
            "packet" => {
                let (next, hex) = iter.next().ok_or("a packet block ends the text")?;
                if next != "hex" {
                    return Err("a packet block must be followed by a hex block".into());
                }
                out.push((parse_packet_block(body)?, parse_hex_block(hex)?));
            }
            "hex" => {
                return Err(format!(
                    "hex block without a packet block before it:\n{body}"
                ));
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_blocks_need_names_and_offsets_in_step() {
        let ok = "```hex\n# example: x\n00: 01 02\n02: 03\n```\n";
        assert_eq!(register_examples(ok).unwrap()["x"], vec![1, 2, 3]);
        assert!(register_examples("```hex\n00: 01\n```\n").is_err());
        assert!(register_examples("```hex\n# example: y\n00: 01\n05: 02\n```\n").is_err());
        assert!(register_examples("```hex\n# example: z\n00: 1\n```\n").is_err());
        assert!(fenced_blocks("```hex\n00").is_err());
    }

    #[test]
    fn packet_blocks_reject_unknown_and_missing_keys() {
        assert!(parse_packet_block("type = ack\n").is_err());
        assert!(wire_examples("```hex\n01\n```\n").is_err());
    }
}
