//! The bearer token of a request, read from its `Authorization` header (RFC 6750).

/// The token of an `Authorization: Bearer <token>` header value; `None` when the header is
/// missing, names another scheme, or holds no token or more than one word. The scheme's
/// name is case-insensitive, as RFC 9110 says of every scheme.
pub fn bearer_token(value: Option<&str>) -> Option<&str> {
    let (scheme, token) = value?.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    (!token.is_empty() && !token.contains(char::is_whitespace)).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::bearer_token;

    #[test]
    fn a_bearer_header_gives_its_token() {
        assert_eq!(bearer_token(Some("Bearer abc.def")), Some("abc.def"));
        assert_eq!(bearer_token(Some("bearer abc")), Some("abc"));
        assert_eq!(bearer_token(Some("BEARER  abc ")), Some("abc"));
    }

    #[test]
    fn anything_else_gives_no_token() {
        for refused in [
            None,
            Some(""),
            Some("Bearer"),
            Some("Bearer "),
            Some("Basic dXNlcjpwYXNz"),
            Some("Bearer two words"),
            Some("abc"),
        ] {
            assert_eq!(bearer_token(refused), None, "{refused:?}");
        }
    }
}
