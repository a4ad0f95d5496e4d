//! Body structs that only a JSON object may fill.
//!
//! serde's derived `Deserialize` for a struct also reads it from a JSON array, field by field
//! in declaration order, so `{"mounts": []}` would be an empty `mounts` object although the
//! document types it `object`. A nested body struct opts out with
//! `#[serde(remote = "Self")]` (which turns the derived impl into an inherent
//! `Type::deserialize`) and `objects_only!(Type)`, which implements `Deserialize` by asking the
//! format for a map: anything else is refused as "must be an object (got ...)".

use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};

/// Implements `Deserialize` for structs derived with `#[serde(remote = "Self")]` so that only
/// a JSON object reads as one.
macro_rules! objects_only {
    ($($t:ty),+ $(,)?) => {$(
        impl<'de> ::serde::Deserialize<'de> for $t {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <$t>::deserialize($crate::v2::object::MapOnly(d))
            }
        }
    )+};
}
pub(crate) use objects_only;

/// A deserializer that reads a struct only from a map.
pub struct MapOnly<D>(pub D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for MapOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_map(ObjectVisitor(visitor))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// Passes a map on to the struct's own visitor; anything else is refused as not an object.
struct ObjectVisitor<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for ObjectVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(map)
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use crate::v2::request::{not_null, parse_body};

    #[derive(Debug, Deserialize)]
    #[serde(remote = "Self", deny_unknown_fields)]
    struct Inner {
        #[serde(default, deserialize_with = "not_null")]
        size: Option<u32>,
    }
    objects_only!(Inner);

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        #[serde(default, deserialize_with = "not_null")]
        inner: Option<Inner>,
        #[serde(default)]
        list: Vec<Inner>,
    }

    #[test]
    fn a_struct_is_read_only_from_an_object() {
        let o: Outer = parse_body(br#"{"inner":{"size":3},"list":[{}]}"#).unwrap();
        assert_eq!(o.inner.unwrap().size, Some(3));
        assert_eq!(o.list.len(), 1);
        for (body, error) in [
            (r#"{"inner":[]}"#, "inner: must be an object (got sequence)"),
            (
                r#"{"inner":[3]}"#,
                "inner: must be an object (got sequence)",
            ),
            (
                r#"{"inner":"x"}"#,
                "inner: must be an object (got string \"x\")",
            ),
            (
                r#"{"list":[[]]}"#,
                "list[0]: must be an object (got sequence)",
            ),
            (
                r#"{"inner":{"size":"3"}}"#,
                "inner.size: must be u32 (got string \"3\")",
            ),
            (
                r#"{"inner":{"x":1}}"#,
                "inner.x: unexpected property, not allowed here",
            ),
        ] {
            let p = parse_body::<Outer>(body.as_bytes()).unwrap_err();
            assert_eq!(p.errors, [error], "{body}");
        }
    }

    /// Every nested object of the v2 bodies refuses an array, even one holding its fields in
    /// declaration order.
    #[test]
    fn nested_body_objects_refuse_arrays() {
        use crate::v2::clusters::{CreateClusterBody, UpdateClusterBody};
        use crate::v2::pods::{CreatePodBody, UpdatePodBody};
        use crate::v2::serverless::body::EndpointBody;

        fn refused<T: serde::de::DeserializeOwned + std::fmt::Debug>(body: &str, field: &str) {
            let p = parse_body::<T>(body.as_bytes()).unwrap_err();
            assert_eq!(p.status.as_u16(), 422, "{body}");
            assert_eq!(
                p.errors,
                [format!("{field}: must be an object (got sequence)")],
                "{body}"
            );
        }
        refused::<CreatePodBody>(r#"{"name":"p","gpu":["x",1]}"#, "gpu");
        refused::<CreatePodBody>(r#"{"name":"p","cpu":["cpu3c",2]}"#, "cpu");
        refused::<CreatePodBody>(r#"{"name":"p","mounts":[]}"#, "mounts");
        refused::<CreatePodBody>(
            r#"{"name":"p","mounts":{"persistent":[20,"/d"]}}"#,
            "mounts.persistent",
        );
        refused::<CreatePodBody>(
            r#"{"name":"p","mounts":{"network":[["nv","/n"]]}}"#,
            "mounts.network[0]",
        );
        refused::<UpdatePodBody>(r#"{"mounts":[]}"#, "mounts");
        refused::<CreateClusterBody>(
            r#"{"name":"c","type":"SLURM","compute":["x",1,2]}"#,
            "compute",
        );
        refused::<CreateClusterBody>(
            r#"{"name":"c","type":"SLURM","compute":{"gpuTypeId":"x","gpuCountPerPod":1,"podCount":2},"mounts":[]}"#,
            "mounts",
        );
        assert!(parse_body::<UpdateClusterBody>(br#"{"name":"c"}"#).is_ok());
        refused::<EndpointBody>(r#"{"gpu":[]}"#, "gpu");
        refused::<EndpointBody>(r#"{"workers":[]}"#, "workers");
        refused::<EndpointBody>(r#"{"scaling":["QUEUE_DELAY"]}"#, "scaling");
        refused::<EndpointBody>(r#"{"cpu":[["cpu3c",2]]}"#, "cpu[0]");
    }
}
