//! `#[derive(hearth_json::Deserialize)]`: serde's struct reader, less the
//! code serde's derive writes again for every struct.
//!
//! Why: serde's derive gives each struct its own field-name type (an enum,
//! its visitor, its `deserialize_identifier` and `next_key_seed` instances):
//! ~300 bytes of WASM per struct read, ~150 structs. Here every struct names
//! its keys in one `&'static [&str]` table and reads them with one shared
//! seed (`hearth_json::__private::Key`), and each field's value is read by
//! one function per value type (`__private::field`): the struct's own code
//! is a call per field.
//!
//! Enums (serde's default, externally tagged form: unit, newtype and
//! struct variants, `remote` twins too) read their variant names the same
//! way, and a struct variant's fields as a struct's.
//!
//! What it reads is what serde's derive reads (the tests in
//! `durable/json/src/tests/derive.rs` compare the two): the same names
//! (`rename_all`, `rename`, `alias`), the same defaults (`default`,
//! `default = "path"`, a container `default`), `skip`/`skip_deserializing`,
//! `deserialize_with`/`with`, `deny_unknown_fields`, and the same error
//! texts. A missing `Option<_>` field (spelled `Option`) is `None`, as with
//! serde. Two differences, both about shapes JSON readers never meet: a
//! struct (or struct variant) is read from an object only, never from an
//! array of its fields; a field or variant named by an integer index is not
//! read. Anything else serde's attributes can say (`flatten`, `tag`,
//! generics, tuple structs and variants) is a compile error naming the attribute:
//! keep serde's derive for those. Serialize-only attributes are ignored.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Error, Fields};

mod attrs;
mod fields;

use attrs::Container;
use fields::{map_reader, Reader};

#[proc_macro_derive(Deserialize, attributes(serde))]
pub fn derive_deserialize(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(input: &DeriveInput) -> syn::Result<Tokens> {
    if !input.generics.params.is_empty() {
        return Err(Error::new_spanned(
            &input.generics,
            "hearth_json::Deserialize reads types without generics or lifetimes: use serde's derive",
        ));
    }
    let c = attrs::container(&input.ident, &input.attrs)?;
    let body = match &input.data {
        Data::Struct(s) => match &s.fields {
            Fields::Named(named) => read_struct(input, &c, named)?,
            _ => return Err(Error::new_spanned(input, "hearth_json::Deserialize reads structs with named fields")),
        },
        Data::Enum(e) => read_enum(input, &c, e)?,
        Data::Union(_) => return Err(Error::new_spanned(input, "hearth_json::Deserialize does not read unions")),
    };
    let ty = &input.ident;
    Ok(match &c.remote {
        // serde's `remote`: a function on the twin that reads the real type.
        Some(remote) => {
            let vis = &input.vis;
            quote! {
                #[automatically_derived]
                impl #ty {
                    #vis fn deserialize<'de, __D: ::hearth_json::__private::serde::Deserializer<'de>>(
                        __d: __D,
                    ) -> ::core::result::Result<#remote, __D::Error> {
                        #body
                    }
                }
            }
        }
        None => quote! {
            #[automatically_derived]
            impl<'de> ::hearth_json::__private::serde::Deserialize<'de> for #ty {
                fn deserialize<__D: ::hearth_json::__private::serde::Deserializer<'de>>(
                    __d: __D,
                ) -> ::core::result::Result<Self, __D::Error> {
                    #body
                }
            }
        },
    })
}

/// The type built and its name in `expecting` texts: the remote type for a twin.
fn built(input: &DeriveInput, c: &Container) -> (Tokens, String) {
    match &c.remote {
        Some(remote) => {
            let name = remote.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
            (quote! { #remote }, name)
        }
        None => {
            let ty = &input.ident;
            (quote! { #ty }, ty.to_string())
        }
    }
}

fn read_struct(input: &DeriveInput, c: &Container, named: &syn::FieldsNamed) -> syn::Result<Tokens> {
    let rule = c.rename_all.as_deref();
    let fields = named.named.iter().map(|f| attrs::field(f, rule)).collect::<syn::Result<Vec<_>>>()?;
    let (value, type_name) = built(input, c);
    let name = &c.name;
    Ok(map_reader(
        &Reader {
            fields: &fields,
            container_default: c.default,
            deny_unknown_fields: c.deny_unknown_fields,
            build: value.clone(),
            value,
            // serde names the Rust type here, not its `rename`.
            expecting: format!("struct {type_name}"),
        },
        quote! { __d.deserialize_struct(#name, FIELDS, __Visitor) },
    ))
}

fn read_enum(input: &DeriveInput, c: &Container, e: &syn::DataEnum) -> syn::Result<Tokens> {
    if c.default || c.deny_unknown_fields {
        return Err(Error::new_spanned(
            input,
            "hearth_json::Deserialize: `default` and `deny_unknown_fields` are for structs",
        ));
    }
    let (value, type_name) = built(input, c);
    let variants =
        e.variants.iter().map(|v| attrs::variant(v, c.rename_all.as_deref())).collect::<syn::Result<Vec<_>>>()?;
    let (keys, positions) = fields::key_table(variants.iter().map(|v| (v.name.as_str(), v.aliases.as_slice())));
    let mut arms = Vec::new();
    for ((v, syn_v), pats) in variants.iter().zip(&e.variants).zip(&positions) {
        let ident = &v.ident;
        let read = match &syn_v.fields {
            Fields::Unit => quote! {{
                ::hearth_json::__private::serde::de::VariantAccess::unit_variant(__v)?;
                ::core::result::Result::Ok(#value::#ident)
            }},
            Fields::Unnamed(one) if one.unnamed.len() == 1 => {
                if let Some(attr) = one.unnamed[0].attrs.iter().find(|a| a.path().is_ident("serde")) {
                    return Err(Error::new_spanned(
                        attr,
                        "hearth_json::Deserialize reads no attributes on a newtype variant",
                    ));
                }
                let t = &one.unnamed[0].ty;
                quote! {
                    ::hearth_json::__private::serde::de::VariantAccess::newtype_variant::<#t>(__v).map(#value::#ident)
                }
            }
            Fields::Named(named) => {
                let rule = v.rename_all.as_deref();
                let fields = named.named.iter().map(|f| attrs::field(f, rule)).collect::<syn::Result<Vec<_>>>()?;
                map_reader(
                    &Reader {
                        fields: &fields,
                        container_default: false,
                        deny_unknown_fields: false,
                        value: value.clone(),
                        build: quote! { #value::#ident },
                        expecting: format!("struct variant {type_name}::{ident}"),
                    },
                    quote! {
                        ::hearth_json::__private::serde::de::VariantAccess::struct_variant(__v, FIELDS, __Visitor)
                    },
                )
            }
            Fields::Unnamed(_) => {
                return Err(Error::new_spanned(syn_v, "hearth_json::Deserialize does not read tuple variants"))
            }
        };
        arms.push(quote! { #(#pats)|* => #read, });
    }
    let name = &c.name;
    let expecting = format!("enum {type_name}");
    Ok(quote! {
        const VARIANTS: &[&str] = &[#(#keys),*];
        struct __Enum;
        impl<'de> ::hearth_json::__private::serde::de::Visitor<'de> for __Enum {
            type Value = #value;
            fn expecting(&self, f: &mut ::core::fmt::Formatter) -> ::core::fmt::Result {
                f.write_str(#expecting)
            }
            fn visit_enum<__A: ::hearth_json::__private::serde::de::EnumAccess<'de>>(
                self,
                __e: __A,
            ) -> ::core::result::Result<#value, __A::Error> {
                let (__k, __v) = ::hearth_json::__private::serde::de::EnumAccess::variant_seed(
                    __e,
                    ::hearth_json::__private::Key::variants(VARIANTS),
                )?;
                match __k {
                    #(#arms)*
                    // `Key::variants` refuses every other name.
                    _ => ::core::result::Result::Err(
                        <__A::Error as ::hearth_json::__private::serde::de::Error>::custom("no such variant"),
                    ),
                }
            }
        }
        __d.deserialize_enum(#name, VARIANTS, __Enum)
    })
}
