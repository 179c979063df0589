//! The digest of output files: 64-bit FNV-1a, in one call or fed in pieces.

/// 64-bit FNV-1a over bytes (the digest of output files; fixed and platform-independent).
pub fn digest(parts: &[&[u8]]) -> u64 {
    let mut h = Fnv::default();
    for p in parts {
        h.update(p);
    }
    h.finish()
}

/// [`digest`] fed in pieces: the same hash of the concatenation.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The hash of everything added.
    pub fn finish(self) -> u64 {
        self.0
    }
}
