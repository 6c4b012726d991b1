//! The reader of named fields from a map: a struct's, or a struct variant's.

use crate::attrs::{is_option, Field, Missing};
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};

/// What to read and what to build.
pub struct Reader<'a> {
    pub fields: &'a [Field],
    /// The container's `#[serde(default)]`: a missing field is the default value's.
    pub container_default: bool,
    pub deny_unknown_fields: bool,
    /// The type built (the visitor's `Value`).
    pub value: Tokens,
    /// The path of what is built: `S` or `E::Variant`.
    pub build: Tokens,
    /// The visitor's `expecting` text.
    pub expecting: String,
}

/// The names read, as serde lists them (its `FIELDS`/`VARIANTS`, named in
/// "expected one of" errors): for each field or variant its name and
/// aliases, sorted. Also, for each, the positions of its names there.
pub fn key_table<'a>(items: impl Iterator<Item = (&'a str, &'a [String])>) -> (Vec<&'a str>, Vec<Vec<usize>>) {
    let mut keys = Vec::new();
    let mut positions = Vec::new();
    for (name, aliases) in items {
        let names: std::collections::BTreeSet<&str> =
            std::iter::once(name).chain(aliases.iter().map(String::as_str)).collect();
        positions.push((keys.len()..keys.len() + names.len()).collect());
        keys.extend(names);
    }
    (keys, positions)
}

/// A block expression that declares `FIELDS` (see [`key_table`]) and a visitor `__Visitor`, then evaluates `call`, which names them.
pub fn map_reader(r: &Reader, call: Tokens) -> Tokens {
    let read: Vec<&Field> = r.fields.iter().filter(|f| !f.skip).collect();
    let (keys, positions) = key_table(read.iter().map(|f| (f.name.as_str(), f.aliases.as_slice())));
    let deny = r.deny_unknown_fields;

    let slot = |i: usize| format_ident!("__f{}", i);
    let with_type = |i: usize| format_ident!("__With{}", i);
    // A field read with `deserialize_with` goes through a newtype of its own.
    let wrappers = read.iter().enumerate().filter_map(|(i, f)| {
        let path = f.with.as_ref()?;
        let w = with_type(i);
        let t = &f.ty;
        Some(quote! {
            struct #w(#t);
            impl<'de> ::hearth_json::__private::serde::Deserialize<'de> for #w {
                fn deserialize<__D: ::hearth_json::__private::serde::Deserializer<'de>>(
                    __d: __D,
                ) -> ::core::result::Result<Self, __D::Error> {
                    #path(__d).map(#w)
                }
            }
        })
    });
    let declare = read.iter().enumerate().map(|(i, f)| {
        let s = slot(i);
        let t = match f.with {
            Some(_) => {
                let w = with_type(i);
                quote! { #w }
            }
            None => {
                let t = &f.ty;
                quote! { #t }
            }
        };
        quote! { let mut #s: ::core::option::Option<#t> = ::core::option::Option::None; }
    });
    // Each arm is one call of a reader shared by every field of the same type.
    let arms = read.iter().enumerate().map(|(i, f)| {
        let s = slot(i);
        let name = &f.name;
        let pats = positions[i].iter();
        quote! { #(#pats)|* => ::hearth_json::__private::field(&mut __m, &mut #s, #name)?, }
    });
    let value = &r.value;
    let container_default = r.container_default.then(|| {
        quote! { let __default: #value = ::core::default::Default::default(); }
    });
    let fallback = |f: &Field| -> Tokens {
        let ident = &f.ident;
        match &f.missing {
            Missing::Default => quote! { ::core::default::Default::default() },
            Missing::Call(path) => quote! { #path() },
            Missing::Required if r.container_default => quote! { __default.#ident },
            Missing::Required if f.skip => quote! { ::core::default::Default::default() },
            Missing::Required if f.with.is_none() && is_option(&f.ty) => quote! { ::core::option::Option::None },
            Missing::Required => {
                let name = &f.name;
                quote! {
                    return ::core::result::Result::Err(
                        <__A::Error as ::hearth_json::__private::serde::de::Error>::missing_field(#name),
                    )
                }
            }
        }
    };
    let mut next_slot = 0;
    let build_fields = r.fields.iter().map(|f| {
        let ident = &f.ident;
        let value = fallback(f);
        if f.skip {
            quote! { #ident: #value }
        } else {
            let s = slot(next_slot);
            next_slot += 1;
            let unwrap = if f.with.is_some() { quote! { __v.0 } } else { quote! { __v } };
            quote! { #ident: match #s { ::core::option::Option::Some(__v) => #unwrap, ::core::option::Option::None => #value } }
        }
    });
    let build = &r.build;
    let expecting = &r.expecting;

    quote! {{
        const FIELDS: &[&str] = &[#(#keys),*];
        struct __Visitor;
        impl<'de> ::hearth_json::__private::serde::de::Visitor<'de> for __Visitor {
            type Value = #value;
            fn expecting(&self, f: &mut ::core::fmt::Formatter) -> ::core::fmt::Result {
                f.write_str(#expecting)
            }
            fn visit_map<__A: ::hearth_json::__private::serde::de::MapAccess<'de>>(
                self,
                mut __m: __A,
            ) -> ::core::result::Result<#value, __A::Error> {
                #(#wrappers)*
                #(#declare)*
                while let ::core::option::Option::Some(__k) = __m.next_key_seed(
                    ::hearth_json::__private::Key::fields(FIELDS, #deny),
                )? {
                    match __k {
                        #(#arms)*
                        _ => ::hearth_json::__private::skip(&mut __m)?,
                    }
                }
                #container_default
                ::core::result::Result::Ok(#build { #(#build_fields),* })
            }
        }
        #call
    }}
}
