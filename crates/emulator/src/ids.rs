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
}
