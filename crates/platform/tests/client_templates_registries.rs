//! The template and registry credential facades (`client.templates()`,
//! `client.registries()`) against the emulator over real HTTP, on both backends: the same
//! calls give the same domain objects, and the credentials never come back nor reach a log.

mod common;

use std::collections::BTreeMap;

use gpucloud_platform::domain::{NewRegistryCredential, NewTemplate, TemplateChange};
use gpucloud_platform::{ErrorClass, PlatformApi};

use common::*;

const PASSWORD: &str = "pa55-w0rd-never-shown";
const USERNAME: &str = "robot-user-never-shown";

async fn start_on(api: PlatformApi) -> Env {
    start_with(emulator_config(), |cfg| cfg.api = api).await
}

fn new_template(name: &str, registry: Option<String>) -> NewTemplate {
    NewTemplate {
        name: name.into(),
        image: "ghcr.io/acme/worker:1".into(),
        args: "python serve.py".into(),
        container_disk_gb: Some(20),
        volume_gb: 10,
        volume_mount_path: Some("/data".into()),
        env: BTreeMap::from([("TOKEN".to_string(), "t0ken-value".to_string())]),
        ports: vec!["8000/http".into()],
        serverless: true,
        registry_id: registry,
        ..Default::default()
    }
}

async fn templates_and_registries_round_trip(api: PlatformApi) {
    let env = start_on(api).await;
    let registries = env.client.registries();
    let templates = env.client.templates();

    let old = registries
        .create(&NewRegistryCredential {
            name: format!("hub-{api}"),
            username: USERNAME.into(),
            password: PASSWORD.into(),
        })
        .await
        .unwrap();
    assert!(registries.list().await.unwrap().contains(&old));
    // A second credential of the same name: REST v1 refuses it; the REST v2 document asks
    // no name to be unique, so v2 makes a second credential.
    let dup = registries
        .create(&NewRegistryCredential {
            name: format!("hub-{api}"),
            username: "a".into(),
            password: "b".into(),
        })
        .await;
    match api {
        PlatformApi::V2 => {
            let second = dup.unwrap();
            assert_ne!(second.id, old.id);
            registries.delete(&second.id).await.unwrap();
        }
        PlatformApi::Seed => assert_eq!(
            dup.unwrap_err().class(),
            ErrorClass::InvalidInput,
            "a taken name on REST v1"
        ),
    }

    let t = templates
        .create(&new_template(&format!("tpl-{api}"), Some(old.id.clone())))
        .await
        .unwrap();
    assert_eq!(t.image, "ghcr.io/acme/worker:1");
    assert_eq!(t.args, "python serve.py");
    assert_eq!((t.container_disk_gb, t.volume_gb), (Some(20), 10));
    assert_eq!(t.volume_mount_path.as_deref(), Some("/data"));
    assert_eq!(t.env.get("TOKEN").map(String::as_str), Some("t0ken-value"));
    assert!(t.serverless);
    assert_eq!(t.registry_id.as_deref(), Some(old.id.as_str()));
    let listed = templates.list().await.unwrap();
    assert_eq!(listed.iter().find(|l| l.id == t.id), Some(&t));

    // A rotation: a new credential, the template switched to it, the old one deleted.
    let new = registries
        .create(&NewRegistryCredential {
            name: format!("hub-{api}-2"),
            username: USERNAME.into(),
            password: "another-pa55".into(),
        })
        .await
        .unwrap();
    templates
        .update(
            &t.id,
            &TemplateChange {
                image: Some("ghcr.io/acme/worker:2".into()),
                registry_id: Some(Some(new.id.clone())),
                env: Some(BTreeMap::from([("MODE".to_string(), "fast".to_string())])),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    registries.delete(&old.id).await.unwrap();
    let after = templates
        .list()
        .await
        .unwrap()
        .into_iter()
        .find(|l| l.id == t.id)
        .unwrap();
    assert_eq!(after.image, "ghcr.io/acme/worker:2");
    assert_eq!(after.registry_id.as_deref(), Some(new.id.as_str()));
    assert_eq!(after.env.keys().collect::<Vec<_>>(), vec!["MODE"]);

    // What each backend cannot do in place is refused as invalid input, naming the field.
    let serverless = templates
        .update(
            &t.id,
            &TemplateChange {
                serverless: Some(false),
                ..Default::default()
            },
        )
        .await;
    match api {
        PlatformApi::Seed => {
            let e = serverless.unwrap_err();
            assert_eq!(e.class(), ErrorClass::InvalidInput, "{e}");
            assert!(e.to_string().contains("serverless"), "{e}");
            assert_eq!(after.fixed, &["serverless", "category"]);
        }
        PlatformApi::V2 => {
            serverless.unwrap();
            assert!(after.fixed.is_empty());
        }
    }

    // Removing the credential from the template.
    templates
        .update(
            &t.id,
            &TemplateChange {
                registry_id: Some(None),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let cleared = templates.list().await.unwrap();
    assert_eq!(
        cleared.iter().find(|l| l.id == t.id).unwrap().registry_id,
        None
    );

    templates.delete(&t.id).await.unwrap();
    let gone = templates.delete(&t.id).await.unwrap_err();
    assert_eq!(gone.class(), ErrorClass::NotFound, "{gone}");
    registries.delete(&new.id).await.unwrap();
    assert!(
        registries
            .list()
            .await
            .unwrap()
            .iter()
            .all(|r| r.id != new.id)
    );

    let logs = captured();
    assert!(!logs.contains(PASSWORD) && !logs.contains(USERNAME));
    assert_no_key_logged();
    env.shutdown().await;
}

#[tokio::test]
async fn templates_and_registries_on_rest_v2() {
    templates_and_registries_round_trip(PlatformApi::V2).await;
}

#[tokio::test]
async fn templates_and_registries_on_the_seed_api() {
    templates_and_registries_round_trip(PlatformApi::Seed).await;
}

#[tokio::test]
async fn a_template_in_use_is_not_deleted_and_an_unknown_registry_is_invalid() {
    for api in [PlatformApi::V2, PlatformApi::Seed] {
        let env = start_on(api).await;
        let missing = env
            .client
            .templates()
            .create(&new_template(
                &format!("bad-{api}"),
                Some("no-such-reg".into()),
            ))
            .await
            .unwrap_err();
        assert_eq!(
            missing.class(),
            ErrorClass::InvalidInput,
            "{api}: {missing}"
        );
        // The fixtures' endpoint runs on `tmpl-worker-base`.
        let used = env
            .client
            .templates()
            .delete("tmpl-worker-base")
            .await
            .unwrap_err();
        assert_eq!(used.class(), ErrorClass::InvalidInput, "{api}: {used}");
        env.shutdown().await;
    }
}
