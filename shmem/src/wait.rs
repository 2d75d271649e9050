//! Point-to-point synchronization: the comparisons of `shmem_wait_until`
//! and `shmem_test`.

/// The comparison a wait or test applies: `word <cmp> value`.
///
/// ```
/// use shmem::Cmp;
/// assert!(Cmp::Ge.holds(5, 5));
/// assert!(!Cmp::Lt.holds(-1i32, -2));
/// assert!(Cmp::Ne.holds(1u64, 2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// `word == value` (`SHMEM_CMP_EQ`).
    Eq,
    /// `word != value` (`SHMEM_CMP_NE`).
    Ne,
    /// `word > value` (`SHMEM_CMP_GT`).
    Gt,
    /// `word >= value` (`SHMEM_CMP_GE`).
    Ge,
    /// `word < value` (`SHMEM_CMP_LT`).
    Lt,
    /// `word <= value` (`SHMEM_CMP_LE`).
    Le,
}

impl Cmp {
    /// All six comparisons.
    pub const ALL: [Cmp; 6] = [Cmp::Eq, Cmp::Ne, Cmp::Gt, Cmp::Ge, Cmp::Lt, Cmp::Le];

    /// The comparison as an operator: `==`, `!=`, `>`, `>=`, `<`, `<=`.
    ///
    /// ```
    /// assert_eq!(shmem::Cmp::Ge.symbol(), ">=");
    /// ```
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
        }
    }

    /// Whether `word <self> value`.
    #[inline(always)]
    pub fn holds<T: Ord>(self, word: T, value: T) -> bool {
        match self {
            Cmp::Eq => word == value,
            Cmp::Ne => word != value,
            Cmp::Gt => word > value,
            Cmp::Ge => word >= value,
            Cmp::Lt => word < value,
            Cmp::Le => word <= value,
        }
    }
}
