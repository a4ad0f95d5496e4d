//! Identifiers in the platform's shapes (short lower-case alphanumerics for pods, machines
//! and endpoints; UUIDs with a suffix for jobs).

use rand::Rng;

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A random lower-case alphanumeric id of `len` characters.
pub fn short(len: usize) -> String {
    let mut rng = rand::rng();
    (0..len)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// A [`short`] id that `taken` says no record has yet: a create among 100,000 records must
/// not replace one whose id it drew. `taken` is a keyed lookup, so a create stays O(log n).
pub fn unused(len: usize, taken: impl Fn(&str) -> bool) -> String {
    loop {
        let id = short(len);
        if !taken(&id) {
            return id;
        }
    }
}

/// A job id as the platform writes them: a UUID with a region suffix.
pub fn job() -> String {
    format!("{}-e1", uuid::Uuid::new_v4())
}

#[cfg(test)]
mod tests {
    #[test]
    fn shapes() {
        let id = super::short(14);
        assert_eq!(id.len(), 14);
        assert!(
            id.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
        assert!(super::job().ends_with("-e1"));
        assert_ne!(super::short(14), super::short(14));
    }

    #[test]
    fn an_unused_id_is_drawn_again_until_it_is_free() {
        // One character: 36 ids; all but "z" taken, so only "z" can come back.
        let id = super::unused(1, |id| id != "z");
        assert_eq!(id, "z");
    }
}
