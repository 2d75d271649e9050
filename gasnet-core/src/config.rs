//! Typed configuration tables: the machinery every layer declares its
//! variables with, each exactly once.
//!
//! A layer declares a table with [`config_table!`](crate::config_table): one row per variable
//! (the struct field, its type, the environment variable, its default as
//! text, the [`Codec`] that parses and formats it, one line of help, and
//! optionally a range check). The macro yields the struct, its row list
//! (`VARS`), `from_lookup` (every bad value is a [`ConfigError`] naming the
//! variable, the value and what was expected) and `value_of` (the value in
//! force, as text, for `SHMEM_INFO`). Nothing here reads the environment:
//! callers pass a lookup function (`|k| std::env::var(k).ok()` in a
//! program, a table in a test), so this module does no I/O.
//!
//! ```
//! use gasnet_core::config::{Plain, Size};
//! gasnet_core::config_table! {
//!     /// An example table.
//!     pub struct Example {
//!         heap: usize = "EX_HEAP", default "64M", Size, help "bytes of heap",
//!             check |v: &usize| if *v >= 4096 { Ok(()) } else { Err("at least 4K".to_string()) };
//!         verbose: bool = "EX_VERBOSE", default "0", Plain, help "say more";
//!     }
//! }
//! let e = Example::from_lookup(|k| (k == "EX_HEAP").then(|| "1G".to_string())).unwrap();
//! assert_eq!((e.heap, e.verbose), (1 << 30, false));
//! assert_eq!(e.value_of("EX_HEAP").as_deref(), Some("1G"));
//! let err = Example::from_lookup(|k| (k == "EX_HEAP").then(|| "12".to_string())).unwrap_err();
//! assert_eq!(err.to_string(), "EX_HEAP=\"12\" is not valid: expected at least 4K");
//! assert_eq!(Example::VARS.len(), 2);
//! ```

use std::net::Ipv6Addr;
use std::path::PathBuf;
use std::time::Duration;

/// One row of a configuration table, as `SHMEM_INFO` lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Var {
    /// The environment variable.
    pub name: &'static str,
    /// Its default, as it would be written in the environment (empty:
    /// unset by default).
    pub default: &'static str,
    /// One line of help.
    pub help: &'static str,
}

/// A bad value: names the variable, the value found and what is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable, e.g. `SHMEM_SYMMETRIC_SIZE`.
    pub var: &'static str,
    /// The value found.
    pub value: String,
    /// What was expected.
    pub expected: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}={:?} is not valid: expected {}",
            self.var, self.value, self.expected
        )
    }
}

impl std::error::Error for ConfigError {}

/// Parses and formats values of type `T` as they are written in the
/// environment. `parse` answers `Err(what is accepted)`.
pub trait Codec<T> {
    /// Parses `s` (already trimmed).
    fn parse(s: &str) -> Result<T, String>;
    /// Formats `v` so that `parse` reads it back.
    fn show(v: &T) -> String;
}

/// A type with one natural text form ([`Plain`] uses it).
pub trait ConfigValue: Sized {
    /// Parses `s` (already trimmed); `Err` says what is accepted.
    fn parse_value(s: &str) -> Result<Self, String>;
    /// Formats the value as it would be written in the environment.
    fn show_value(&self) -> String;
}

/// The codec of a [`ConfigValue`] type.
#[derive(Debug)]
pub struct Plain;

impl<T: ConfigValue> Codec<T> for Plain {
    fn parse(s: &str) -> Result<T, String> {
        T::parse_value(s)
    }
    fn show(v: &T) -> String {
        v.show_value()
    }
}

/// Byte sizes with K/M/G/T suffixes ([`parse_size`], [`format_size`]), for
/// `usize` and `u64` (and unset-able `Option`s of them).
#[derive(Debug)]
pub struct Size;

impl Codec<usize> for Size {
    fn parse(s: &str) -> Result<usize, String> {
        parse_size(s)
    }
    fn show(v: &usize) -> String {
        format_size(*v as u64)
    }
}

impl Codec<u64> for Size {
    fn parse(s: &str) -> Result<u64, String> {
        parse_size(s).map(|v| v as u64)
    }
    fn show(v: &u64) -> String {
        format_size(*v)
    }
}

/// Reads one variable through `get`: its value if set and not blank, else
/// `default`, parsed by `C` and checked by `check`. Used by
/// [`config_table!`](crate::config_table).
pub fn read<T, C: Codec<T>>(
    get: &dyn Fn(&str) -> Option<String>,
    var: &'static str,
    default: &'static str,
    check: impl Fn(&T) -> Result<(), String>,
) -> Result<T, ConfigError> {
    let text = get(var)
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| default.to_string());
    let err = |expected: String| ConfigError {
        var,
        value: text.clone(),
        expected,
    };
    let v = C::parse(text.trim()).map_err(err)?;
    check(&v).map_err(err)?;
    Ok(v)
}

/// Declares a configuration table: a struct whose fields are variables.
/// See the [module documentation](self) for the row syntax.
///
/// The struct gets `VARS` (its own rows, in order), `all_vars()` (its rows
/// and those of the tables it includes), `from_lookup(get)`,
/// `value_of(var)`, `rows()` (every variable with its value in force) and a
/// `Default` made of the defaults. An optional `include { field: Type, }`
/// block after the rows embeds other tables as fields: one table that
/// reads, lists and shows theirs too (the runtime's table includes the
/// conduits', so `SHMEM_INFO` lists every layer's variables).
#[macro_export]
macro_rules! config_table {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $field:ident : $ty:ty = $var:literal, default $default:literal, $codec:ty,
                    help $help:literal $(, check $check:expr)? ;
            )*
        }
        $(include {
            $( $(#[$imeta:meta])* $ifield:ident : $ity:ty ),* $(,)?
        })?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        $vis struct $name {
            $(
                #[doc = concat!("`", $var, "` (default `", $default, "`): ", $help, ".")]
                pub $field: $ty,
            )*
            $($( $(#[$imeta])* pub $ifield: $ity, )*)?
        }

        impl $name {
            /// The variables of this table, in the order `SHMEM_INFO` lists them.
            pub const VARS: &'static [$crate::config::Var] = &[
                $( $crate::config::Var { name: $var, default: $default, help: $help }, )*
            ];

            /// Every variable this table reads: its own, then those of the
            /// tables it includes.
            pub fn all_vars() -> Vec<$crate::config::Var> {
                #[allow(unused_mut)]
                let mut v = Self::VARS.to_vec();
                $($( v.extend(<$ity>::all_vars()); )*)?
                v
            }

            /// Reads every variable through `get`; unset or blank ones take
            /// their defaults. A bad value is an error naming the variable.
            pub fn from_lookup(
                get: impl Fn(&str) -> Option<String>,
            ) -> ::std::result::Result<Self, $crate::config::ConfigError> {
                Ok($name {
                    $(
                        $field: $crate::config::read::<$ty, $codec>(
                            &get,
                            $var,
                            $default,
                            |_v: &$ty| -> ::std::result::Result<(), String> {
                                $( ($check)(_v)?; )?
                                Ok(())
                            },
                        )?,
                    )*
                    $($( $ifield: <$ity>::from_lookup(&get)?, )*)?
                })
            }

            /// The value in force of variable `var` as text, if this table
            /// (or one it includes) reads it.
            pub fn value_of(&self, var: &str) -> Option<String> {
                $(
                    if var == $var {
                        return Some(<$codec as $crate::config::Codec<$ty>>::show(&self.$field));
                    }
                )*
                $($(
                    if let Some(v) = self.$ifield.value_of(var) {
                        return Some(v);
                    }
                )*)?
                None
            }

            /// Every variable with its value in force, included tables' too.
            pub fn rows(&self) -> Vec<($crate::config::Var, String)> {
                Self::all_vars()
                    .into_iter()
                    .map(|v| (v, self.value_of(v.name).unwrap_or_default()))
                    .collect()
            }
        }

        impl Default for $name {
            /// Every variable at its default.
            fn default() -> Self {
                match Self::from_lookup(|_| None) {
                    Ok(v) => v,
                    Err(e) => panic!("a default of {} does not parse: {e}", stringify!($name)),
                }
            }
        }
    };
}

/// Formats `rows` as the `SHMEM_INFO` table: one line per variable with its
/// value in force, its default and its help.
pub fn format_rows(rows: &[(Var, String)]) -> String {
    use std::fmt::Write as _;
    let w = rows.iter().map(|(v, _)| v.name.len()).max().unwrap_or(0);
    let mut s = String::new();
    for (v, val) in rows {
        let val = if val.is_empty() { "-" } else { val };
        let def = if v.default.is_empty() { "-" } else { v.default };
        let _ = writeln!(
            s,
            "  {:w$}  = {:<8} (default {:<4}) {}",
            v.name, val, def, v.help
        );
    }
    s
}

// ----------------------------------------------------------------------
// Parsers shared by every layer (each exists once).

/// Parses a byte size: a decimal integer with an optional suffix K, M, G or
/// T (powers of 1024), optionally followed by `B` or `iB`, in any case, with
/// optional spaces between; a plain trailing `B` means bytes.
///
/// ```
/// use gasnet_core::config::parse_size;
/// assert_eq!(parse_size("512").unwrap(), 512);
/// assert_eq!(parse_size("4k").unwrap(), 4096);
/// assert_eq!(parse_size("64M").unwrap(), 64 << 20);
/// assert_eq!(parse_size("1 GiB").unwrap(), 1 << 30);
/// assert!(parse_size("1.5G").is_err());
/// assert!(parse_size("-1").is_err());
/// ```
pub fn parse_size(value: &str) -> Result<usize, String> {
    let bad = || "a byte count with an optional K, M, G or T suffix (e.g. 512M)".to_string();
    let t = value.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return Err(bad());
    }
    let n: u128 = t[..digits_end].parse().map_err(|_| bad())?;
    let shift = match t[digits_end..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    let bytes = n.checked_shl(shift).filter(|b| b >> shift == n);
    match bytes.and_then(|b| usize::try_from(b).ok()) {
        Some(b) if b <= isize::MAX as usize => Ok(b),
        _ => Err(format!(
            "a size that fits the address space (at most {})",
            isize::MAX
        )),
    }
}

/// Formats a byte size with the largest exact K/M/G/T suffix.
///
/// ```
/// assert_eq!(gasnet_core::config::format_size(64 << 20), "64M");
/// assert_eq!(gasnet_core::config::format_size(1000), "1000");
/// ```
pub fn format_size(n: u64) -> String {
    for (shift, s) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if n != 0 && n.is_multiple_of(1u64 << shift) {
            return format!("{}{s}", n >> shift);
        }
    }
    n.to_string()
}

/// Parses a positive duration: seconds (`10`, `2.5`) or with a unit
/// (`2s`, `500ms`, `250us`), at most 10^9 seconds.
///
/// ```
/// use gasnet_core::config::parse_duration;
/// use std::time::Duration;
/// assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
/// assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
/// assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
/// assert!(parse_duration("soon").is_err());
/// assert!(parse_duration("0").is_err());
/// ```
pub fn parse_duration(value: &str) -> Result<Duration, String> {
    let t = value.trim().to_ascii_lowercase();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        (t.as_str(), 1.0)
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|x| x * scale)
        .filter(|x| x.is_finite() && *x > 0.0 && *x <= 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| "a positive duration (e.g. 10, 2.5s, 500ms)".to_string())
}

/// Formats a duration so that [`parse_duration`] reads it back.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(gasnet_core::config::format_duration(Duration::from_secs(10)), "10s");
/// assert_eq!(gasnet_core::config::format_duration(Duration::from_millis(250)), "250ms");
/// ```
pub fn format_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// Parses a boolean: `1/0`, `y/n`, `yes/no`, `true/false`, `on/off`, any case.
///
/// ```
/// assert_eq!(gasnet_core::config::parse_bool("Yes"), Ok(true));
/// assert!(gasnet_core::config::parse_bool("2").is_err());
/// ```
pub fn parse_bool(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "true" | "on" => Ok(true),
        "0" | "n" | "no" | "false" | "off" => Ok(false),
        _ => Err("a boolean (1/0, yes/no, true/false, on/off)".to_string()),
    }
}

impl ConfigValue for bool {
    fn parse_value(s: &str) -> Result<bool, String> {
        parse_bool(s)
    }
    fn show_value(&self) -> String {
        if *self { "1" } else { "0" }.to_string()
    }
}

impl ConfigValue for usize {
    fn parse_value(s: &str) -> Result<usize, String> {
        s.parse().map_err(|_| "a non-negative integer".to_string())
    }
    fn show_value(&self) -> String {
        self.to_string()
    }
}

impl ConfigValue for Duration {
    fn parse_value(s: &str) -> Result<Duration, String> {
        parse_duration(s)
    }
    fn show_value(&self) -> String {
        format_duration(*self)
    }
}

/// A timeout that may be off: `off`, `0`, `no` or `none` is `None`.
impl ConfigValue for Option<Duration> {
    fn parse_value(s: &str) -> Result<Option<Duration>, String> {
        match s.to_ascii_lowercase().as_str() {
            "" | "off" | "0" | "no" | "none" => Ok(None),
            _ => parse_duration(s)
                .map(Some)
                .map_err(|_| "a positive duration (e.g. 1.5, 500ms, 2s) or off".to_string()),
        }
    }
    fn show_value(&self) -> String {
        self.map_or("off".to_string(), format_duration)
    }
}

impl ConfigValue for String {
    fn parse_value(s: &str) -> Result<String, String> {
        Ok(s.to_string())
    }
    fn show_value(&self) -> String {
        self.clone()
    }
}

impl ConfigValue for PathBuf {
    fn parse_value(s: &str) -> Result<PathBuf, String> {
        Ok(PathBuf::from(s))
    }
    fn show_value(&self) -> String {
        self.display().to_string()
    }
}

impl ConfigValue for Ipv6Addr {
    fn parse_value(s: &str) -> Result<Ipv6Addr, String> {
        s.parse()
            .map_err(|_| "an IPv6 address (e.g. fd00:f5::2 or ::1)".to_string())
    }
    fn show_value(&self) -> String {
        self.to_string()
    }
}

/// The codec of a row that may be unset: an empty text (the row's default
/// is empty) is `None`, anything else is parsed as a `T`.
#[derive(Debug)]
pub struct Unset;

impl<T: ConfigValue> Codec<Option<T>> for Unset {
    fn parse(s: &str) -> Result<Option<T>, String> {
        if s.is_empty() {
            Ok(None)
        } else {
            T::parse_value(s).map(Some)
        }
    }
    fn show(v: &Option<T>) -> String {
        v.as_ref().map_or(String::new(), |v| v.show_value())
    }
}

impl Codec<Option<usize>> for Size {
    fn parse(s: &str) -> Result<Option<usize>, String> {
        if s.is_empty() {
            Ok(None)
        } else {
            parse_size(s).map(Some)
        }
    }
    fn show(v: &Option<usize>) -> String {
        v.map_or(String::new(), |n| format_size(n as u64))
    }
}

/// Checks that a duration lies in `lo..=hi`, for a row's `check`.
pub fn within_duration(v: Duration, lo: Duration, hi: Duration) -> Result<(), String> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(format!(
            "a duration from {} to {}",
            format_duration(lo),
            format_duration(hi)
        ))
    }
}

/// Checks that `v` lies in `lo..=hi`, for a row's `check`.
///
/// ```
/// assert!(gasnet_core::config::within(3usize, 1, 64).is_ok());
/// assert_eq!(gasnet_core::config::within(0usize, 1, 64).unwrap_err(), "a value from 1 to 64");
/// ```
pub fn within<T: PartialOrd + std::fmt::Display>(v: T, lo: T, hi: T) -> Result<(), String> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(format!("a value from {lo} to {hi}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::config_table! {
        /// A test table.
        struct T {
            size: usize = "T_SIZE", default "64M", Size, help "a size",
                check |v: &usize| within(*v, 1 << 10, 1 << 40);
            on: bool = "T_ON", default "0", Plain, help "a switch";
            wait: Option<Duration> = "T_WAIT", default "off", Plain, help "a timeout";
            peer: Duration = "T_PEER", default "10s", Plain, help "a duration";
            addr: Option<Ipv6Addr> = "T_ADDR", default "", Unset, help "an address";
            mtu: Option<usize> = "T_MTU", default "", Unset, help "a number";
        }
    }

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(a, _)| *a == k)
                .map(|(_, b)| b.to_string())
        }
    }

    crate::config_table! {
        /// A table including another.
        struct Outer {
            depth: usize = "T_DEPTH", default "3", Plain, help "a count";
        }
        include {
            /// The inner table.
            inner: T,
        }
    }

    #[test]
    fn included_tables_are_read_listed_and_shown() {
        let o = Outer::from_lookup(env(&[("T_DEPTH", "5"), ("T_ON", "1")])).unwrap();
        assert_eq!(o.depth, 5);
        assert!(o.inner.on);
        assert_eq!(o.value_of("T_ON").as_deref(), Some("1"));
        let names: Vec<&str> = Outer::all_vars().iter().map(|v| v.name).collect();
        assert_eq!(names[0], "T_DEPTH");
        assert!(names.contains(&"T_SIZE") && names.len() == 1 + T::VARS.len());
        assert_eq!(o.rows().len(), names.len());
        let e = Outer::from_lookup(env(&[("T_SIZE", "x")])).unwrap_err();
        assert_eq!(e.var, "T_SIZE");
    }

    #[test]
    fn defaults_and_values_round_trip() {
        let d = T::default();
        assert_eq!(d.size, 64 << 20);
        assert_eq!((d.on, d.wait, d.addr, d.mtu), (false, None, None, None));
        assert_eq!(d.peer, Duration::from_secs(10));
        for v in T::VARS {
            let shown = d.value_of(v.name).unwrap();
            let again = T::from_lookup(|k| (k == v.name).then(|| shown.clone())).unwrap();
            assert_eq!(again, d, "{}", v.name);
        }
        let t = T::from_lookup(env(&[
            ("T_SIZE", " 2G "),
            ("T_ON", "yes"),
            ("T_WAIT", "500ms"),
            ("T_ADDR", "::1"),
            ("T_MTU", "1500"),
            ("T_PEER", "   "),
        ]))
        .unwrap();
        assert_eq!(t.size, 2 << 30);
        assert!(t.on);
        assert_eq!(t.wait, Some(Duration::from_millis(500)));
        assert_eq!(t.addr, Some(Ipv6Addr::LOCALHOST));
        assert_eq!(t.mtu, Some(1500));
        assert_eq!(t.peer, Duration::from_secs(10));
        assert!(format_rows(&t.rows()).contains("T_SIZE"));
    }

    #[test]
    fn bad_values_name_the_variable_and_the_value() {
        for (var, bad) in [
            ("T_SIZE", "12"),
            ("T_SIZE", "1.5G"),
            ("T_ON", "maybe"),
            ("T_WAIT", "-1"),
            ("T_PEER", "off"),
            ("T_ADDR", "1.2.3.4"),
            ("T_MTU", "x"),
        ] {
            let e = T::from_lookup(|k| (k == var).then(|| bad.to_string())).unwrap_err();
            assert_eq!(e.var, var);
            let s = e.to_string();
            assert!(s.starts_with(&format!("{var}={bad:?}")), "{s}");
        }
    }

    #[test]
    fn sizes_and_durations() {
        for (s, n) in [
            ("0", 0),
            ("100B", 100),
            ("3kb", 3 << 10),
            ("2T", 2usize << 40),
        ] {
            assert_eq!(parse_size(s).unwrap(), n, "{s}");
        }
        for s in ["abc", "M", "12Q", "-4K", "+4", "4 K B", "16777216T"] {
            assert!(parse_size(s).is_err(), "{s}");
        }
        for n in [0u64, 1, 1000, 4096, 64 << 20, (3 << 30) + 1] {
            assert_eq!(parse_size(&format_size(n)).unwrap() as u64, n);
        }
        for d in [
            Duration::from_secs(3),
            Duration::from_millis(1),
            Duration::from_micros(1500),
        ] {
            assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
        }
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert!(parse_duration("1e10").is_err());
    }
}
