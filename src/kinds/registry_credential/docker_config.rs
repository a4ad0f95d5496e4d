//! Reading a registry's username and password out of a `kubernetes.io/dockerconfigjson`
//! Secret, and the hash by which a change of them is noticed. Pure: the Secret is read by
//! the caller. Errors name the Secret, the field and the rule, never a value.

use std::collections::BTreeMap;

use base64::Engine;
use serde::Deserialize;

use gpucloud_crd::registry_credential::{DOCKER_CONFIG_JSON_KEY, DOCKER_CONFIG_JSON_TYPE};

use gpucloud_engine::failure::Failure;

/// A username and password. `Debug` masks both.
#[derive(Clone, PartialEq, Eq)]
pub struct RegistryLogin {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for RegistryLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RegistryLogin { username: ***, password: *** }")
    }
}

#[derive(Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(Deserialize)]
struct AuthEntry {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    /// `base64(username:password)`, which some tools write instead of the two fields.
    #[serde(default)]
    auth: Option<String>,
}

/// The host of a `.dockerconfigjson` key, which may be a URL (`https://index.docker.io/v1/`).
fn host_of(key: &str) -> &str {
    let rest = key.split_once("://").map_or(key, |(_, rest)| rest);
    rest.split('/').next().unwrap_or(rest)
}

/// The login for `registry` in a Secret of `secret_type` whose data are `data`. `secret`
/// names the Secret in messages.
pub fn login_for(
    secret: &str,
    secret_type: Option<&str>,
    data: Option<&[u8]>,
    registry: &str,
) -> Result<RegistryLogin, Failure> {
    if secret_type != Some(DOCKER_CONFIG_JSON_TYPE) {
        return Err(Failure::permanent(
            "WrongSecretType",
            format!(
                "spec.secretRef: Secret {secret} is of type {:?}; it must be {DOCKER_CONFIG_JSON_TYPE} (kubectl create secret docker-registry)",
                secret_type.unwrap_or("Opaque")
            ),
        ));
    }
    let Some(data) = data else {
        return Err(Failure::permanent(
            "SecretKeyNotFound",
            format!("spec.secretRef: Secret {secret} has no key {DOCKER_CONFIG_JSON_KEY}"),
        ));
    };
    // serde_json's message may quote the input: it is not passed on.
    let config: DockerConfig = serde_json::from_slice(data).map_err(|_| {
        Failure::permanent(
            "InvalidDockerConfig",
            format!(
                "spec.secretRef: key {DOCKER_CONFIG_JSON_KEY} of Secret {secret} is not a docker config (JSON with an \"auths\" object)"
            ),
        )
    })?;
    let Some(entry) = config
        .auths
        .iter()
        .find(|(key, _)| host_of(key).eq_ignore_ascii_case(registry))
        .map(|(_, e)| e)
    else {
        let hosts: Vec<&str> = config.auths.keys().map(|k| host_of(k)).collect();
        return Err(Failure::permanent(
            "RegistryNotInSecret",
            format!(
                "spec.registry: Secret {secret} has no entry for registry {registry:?} (it has {hosts:?})"
            ),
        ));
    };
    let from_auth = || -> Option<(String, String)> {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(entry.auth.as_deref()?.trim())
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (user, pass) = text.split_once(':')?;
        Some((user.to_string(), pass.to_string()))
    };
    let (username, password) = match (&entry.username, &entry.password) {
        (Some(u), Some(p)) if !u.is_empty() && !p.is_empty() => (u.clone(), p.clone()),
        _ => from_auth().ok_or_else(|| {
            Failure::permanent(
                "InvalidDockerConfig",
                format!(
                    "spec.secretRef: the entry for {registry:?} in Secret {secret} has neither a username and password nor an auth field of the form base64(username:password)"
                ),
            )
        })?,
    };
    if username.is_empty() || password.is_empty() {
        return Err(Failure::permanent(
            "InvalidDockerConfig",
            format!(
                "spec.secretRef: the entry for {registry:?} in Secret {secret} has an empty username or password"
            ),
        ));
    }
    Ok(RegistryLogin { username, password })
}

/// A salted, truncated SHA-256 of what a credential was registered with: 16 hex digits.
/// The salt (the object's uid) makes equal logins of two objects hash apart.
pub fn login_hash(salt: &str, registry: &str, login: &RegistryLogin) -> String {
    let mut ctx = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
    for part in [salt, registry, &login.username, &login.password] {
        // Length-prefixed, so that moving a character between parts changes the hash.
        ctx.update(&(part.len() as u64).to_be_bytes());
        ctx.update(part.as_bytes());
    }
    ctx.finish()
        .as_ref()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TYPE: Option<&str> = Some(DOCKER_CONFIG_JSON_TYPE);

    fn config(entries: &str) -> Vec<u8> {
        format!(r#"{{"auths":{{{entries}}}}}"#).into_bytes()
    }

    #[test]
    fn reads_username_and_password_of_the_registry() {
        let data = config(
            r#""ghcr.io":{"username":"bot","password":"pa55-word","auth":"eA=="},
               "https://index.docker.io/v1/":{"username":"x","password":"y"}"#,
        );
        let login = login_for("pull", TYPE, Some(&data), "ghcr.io").unwrap();
        assert_eq!(login.username, "bot");
        assert_eq!(login.password, "pa55-word");
        let hub = login_for("pull", TYPE, Some(&data), "index.docker.io").unwrap();
        assert_eq!(hub.username, "x");
    }

    #[test]
    fn falls_back_to_the_auth_field() {
        // base64("bot:pa55:word"): the password may hold a colon.
        let data = config(r#""registry.example.com:5000":{"auth":"Ym90OnBhNTU6d29yZA=="}"#);
        let login = login_for("pull", TYPE, Some(&data), "registry.example.com:5000").unwrap();
        assert_eq!(
            (login.username.as_str(), login.password.as_str()),
            ("bot", "pa55:word")
        );
    }

    #[test]
    fn refusals_name_the_field_and_never_a_value() {
        let data = config(r#""ghcr.io":{"username":"bot","password":"pa55-word"}"#);
        let cases = [
            login_for("pull", Some("Opaque"), Some(&data), "ghcr.io"),
            login_for("pull", TYPE, None, "ghcr.io"),
            login_for("pull", TYPE, Some(b"pa55-word not json"), "ghcr.io"),
            login_for("pull", TYPE, Some(&data), "quay.io"),
            login_for(
                "pull",
                TYPE,
                Some(&config(r#""ghcr.io":{"username":"bot"}"#)),
                "ghcr.io",
            ),
        ];
        let reasons: Vec<String> = cases
            .into_iter()
            .map(|r| {
                let f = r.unwrap_err();
                assert!(f.is_permanent());
                assert!(!f.message.contains("pa55-word"), "{}", f.message);
                assert!(f.message.starts_with("spec."), "{}", f.message);
                f.reason
            })
            .collect();
        assert_eq!(
            reasons,
            [
                "WrongSecretType",
                "SecretKeyNotFound",
                "InvalidDockerConfig",
                "RegistryNotInSecret",
                "InvalidDockerConfig"
            ]
        );
    }

    #[test]
    fn the_hash_changes_with_any_part_and_hides_the_password() {
        let login = |u: &str, p: &str| RegistryLogin {
            username: u.into(),
            password: p.into(),
        };
        let base = login_hash("uid-1", "ghcr.io", &login("bot", "pw"));
        assert_eq!(base.len(), 16);
        assert_eq!(base, login_hash("uid-1", "ghcr.io", &login("bot", "pw")));
        for other in [
            login_hash("uid-2", "ghcr.io", &login("bot", "pw")),
            login_hash("uid-1", "quay.io", &login("bot", "pw")),
            login_hash("uid-1", "ghcr.io", &login("bo", "tpw")),
            login_hash("uid-1", "ghcr.io", &login("bot", "pw2")),
        ] {
            assert_ne!(base, other);
        }
        assert!(!format!("{:?}", login("bot", "pw")).contains("pw"));
    }
}
