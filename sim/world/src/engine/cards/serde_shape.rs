//! A card's move is a struct of its own file, and a tape spells it as a variant of [`Play`]:
//! `LoseResponse(key: Some("r1:c2"))`, as it always has. These adaptors turn the card's derived
//! struct (de)serialization into the enum's struct variant, so the card's fields, their defaults
//! and `deny_unknown_fields` stay on the card, and the tape syntax does not change.
//!
//! [`Play`]: super::Play

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, VariantAccess, Visitor};
use serde::ser::{self, Impossible, Serialize, Serializer};

/// Serializes a card's struct as the struct variant `variant` of the enum `name`.
pub(super) fn struct_variant<S: Serializer, T: Serialize>(
    serializer: S,
    name: &'static str,
    index: u32,
    variant: &'static str,
    card: &T,
) -> Result<S::Ok, S::Error> {
    card.serialize(AsVariant {
        serializer,
        name,
        index,
        variant,
    })
}

/// A serializer that accepts one struct and writes it as an enum's struct variant.
struct AsVariant<S> {
    serializer: S,
    name: &'static str,
    index: u32,
    variant: &'static str,
}

/// The struct's fields, written into the variant.
struct VariantFields<V>(V);

impl<V: ser::SerializeStructVariant> ser::SerializeStruct for VariantFields<V> {
    type Ok = V::Ok;
    type Error = V::Error;

    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result<(), V::Error> {
        self.0.serialize_field(key, value)
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), V::Error> {
        self.0.skip_field(key)
    }

    fn end(self) -> Result<V::Ok, V::Error> {
        self.0.end()
    }
}

fn not_a_struct<E: ser::Error>() -> E {
    E::custom("a card's move serializes as a struct")
}

impl<S: Serializer> Serializer for AsVariant<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Impossible<S::Ok, S::Error>;
    type SerializeTuple = Impossible<S::Ok, S::Error>;
    type SerializeTupleStruct = Impossible<S::Ok, S::Error>;
    type SerializeTupleVariant = Impossible<S::Ok, S::Error>;
    type SerializeMap = Impossible<S::Ok, S::Error>;
    type SerializeStruct = VariantFields<S::SerializeStructVariant>;
    type SerializeStructVariant = Impossible<S::Ok, S::Error>;

    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Self::SerializeStruct, S::Error> {
        self.serializer
            .serialize_struct_variant(self.name, self.index, self.variant, len)
            .map(VariantFields)
    }

    fn serialize_bool(self, _: bool) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_i8(self, _: i8) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_i16(self, _: i16) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_i32(self, _: i32) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_i64(self, _: i64) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_u8(self, _: u8) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_u16(self, _: u16) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_u32(self, _: u32) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_u64(self, _: u64) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_f32(self, _: f32) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_f64(self, _: f64) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_char(self, _: char) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_str(self, _: &str) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, _: &T) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<S::Ok, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        Err(not_a_struct())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        Err(not_a_struct())
    }
}

/// An enum variant's content, read as the struct a card's move derives its reading for: the
/// derived code asks for a struct, and the variant gives it its fields.
pub(super) struct VariantAsStruct<A>(pub(super) A);

impl<'de, A: VariantAccess<'de>> Deserializer<'de> for VariantAsStruct<A> {
    type Error = A::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, visitor)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, A::Error> {
        Err(de::Error::custom("a card's move is read as a struct"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// Reads an enum variant's name as its index in `names`; an unknown name is refused naming
/// the ones there are.
pub(super) struct VariantName(pub(super) &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for VariantName {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for VariantName {
    type Value = usize;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a card's name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<usize, E> {
        self.0
            .iter()
            .position(|known| *known == name)
            .ok_or_else(|| E::unknown_variant(name, self.0))
    }

    fn visit_u64<E: de::Error>(self, index: u64) -> Result<usize, E> {
        usize::try_from(index)
            .ok()
            .filter(|index| *index < self.0.len())
            .ok_or_else(|| E::invalid_value(de::Unexpected::Unsigned(index), &self))
    }

    fn visit_bytes<E: de::Error>(self, name: &[u8]) -> Result<usize, E> {
        match std::str::from_utf8(name) {
            Ok(name) => self.visit_str(name),
            Err(_) => Err(E::invalid_value(de::Unexpected::Bytes(name), &self)),
        }
    }
}

/// Reads the variant a visitor of an enum is given: its index in `names`, and its content.
pub(super) fn variant<'de, A: EnumAccess<'de>>(
    data: A,
    names: &'static [&'static str],
) -> Result<(usize, A::Variant), A::Error> {
    data.variant_seed(VariantName(names))
}
