//! A small SPIR-V reader: validates the module header and extracts the
//! compute interface coexec needs (work-group size, storage-buffer bindings,
//! push-constant size), so that mismatches become typed errors before any
//! Vulkan object is created.

use crate::error::{Error, Result};
use std::collections::HashMap;

const MAGIC: u32 = 0x0723_0203;

// Opcodes (SPIR-V 1.6 unified specification, section 3.52).
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const OP_TYPE_BOOL: u32 = 20;
const OP_TYPE_INT: u32 = 21;
const OP_TYPE_FLOAT: u32 = 22;
const OP_TYPE_VECTOR: u32 = 23;
const OP_TYPE_MATRIX: u32 = 24;
const OP_TYPE_ARRAY: u32 = 28;
const OP_TYPE_RUNTIME_ARRAY: u32 = 29;
const OP_TYPE_STRUCT: u32 = 30;
const OP_TYPE_POINTER: u32 = 32;
const OP_CONSTANT: u32 = 43;
const OP_SPEC_CONSTANT: u32 = 50;
const OP_VARIABLE: u32 = 59;
const OP_DECORATE: u32 = 71;
const OP_MEMBER_DECORATE: u32 = 72;
const OP_EXECUTION_MODE_ID: u32 = 331;

const EXEC_MODEL_GLCOMPUTE: u32 = 5;
const MODE_LOCAL_SIZE: u32 = 17;
const MODE_LOCAL_SIZE_ID: u32 = 38;

const DEC_BLOCK: u32 = 2;
const DEC_BUFFER_BLOCK: u32 = 3;
const DEC_ARRAY_STRIDE: u32 = 6;
const DEC_NON_WRITABLE: u32 = 24;
const DEC_NON_READABLE: u32 = 25;
const DEC_BINDING: u32 = 33;
const DEC_DESCRIPTOR_SET: u32 = 34;
const DEC_OFFSET: u32 = 35;

const SC_UNIFORM_CONSTANT: u32 = 0;
const SC_UNIFORM: u32 = 2;
const SC_WORKGROUP: u32 = 4;
const SC_PUSH_CONSTANT: u32 = 9;
const SC_STORAGE_BUFFER: u32 = 12;

/// One storage buffer the shader declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpirvBinding {
    /// `layout(binding = N)`.
    pub binding: u32,
    /// `true` when the shader only reads it (`readonly`).
    pub read_only: bool,
    /// `true` when the shader only writes it (`writeonly`, SPIR-V
    /// `NonReadable`): what it writes does not depend on what the buffer
    /// held, so running an item again writes the same values.
    pub write_only: bool,
    /// The element size, where the block is one runtime array (`buffer B {
    /// float x[]; }`): its `ArrayStride` in bytes. `None` for blocks with
    /// other members, whose elements have no single size.
    pub elem_stride: Option<u32>,
}

/// The compute interface of a SPIR-V module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShaderInterface {
    /// Work-group size (`local_size_x/y/z`).
    pub local_size: [u32; 3],
    /// Storage buffers of descriptor set 0, sorted by binding.
    pub bindings: Vec<SpirvBinding>,
    /// Size in bytes of the push-constant block (0 when none).
    pub push_constant_bytes: u32,
    /// The module uses `LocalSizeId` (needs maintenance4 on Vulkan 1.3).
    pub uses_local_size_id: bool,
    /// Bytes of work-group (`shared`) memory its variables take, as
    /// declared (a type whose size is not known counts 0); checked against
    /// the device's `maxComputeSharedMemorySize` when a kernel is built.
    pub shared_memory_bytes: u64,
}

impl ShaderInterface {
    /// `true` when running an item again cannot change the result: every
    /// binding the shader writes is write-only (and every other one
    /// read-only), so a package may run again after a device was lost while
    /// it ran, whatever part of its outputs that device had written.
    pub fn rerun_safe(&self) -> bool {
        self.bindings.iter().all(|b| b.read_only || b.write_only)
    }
}

/// Turns SPIR-V bytes into words, checking length and alignment.
pub fn words_from_bytes(bytes: &[u8]) -> Result<Vec<u32>> {
    if bytes.len() < 20 {
        return Err(Error::InvalidSpirv(format!(
            "{} bytes is shorter than the 20-byte SPIR-V header",
            bytes.len()
        )));
    }
    if bytes.len() % 4 != 0 {
        return Err(Error::InvalidSpirv(format!(
            "length {} is not a multiple of 4 (truncated?)",
            bytes.len()
        )));
    }
    let mut words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if words[0] == MAGIC.swap_bytes() {
        for w in &mut words {
            *w = w.swap_bytes();
        }
    }
    Ok(words)
}

#[derive(Default)]
struct Types {
    // id -> size in bytes (scalars, vectors, matrices, arrays, structs)
    sizes: HashMap<u32, u64>,
    constants: HashMap<u32, u64>,
    structs: HashMap<u32, Vec<u32>>,
    pointers: HashMap<u32, (u32, u32)>, // id -> (storage class, pointee)
    arrays: HashMap<u32, (u32, Option<u32>)>, // id -> (elem, length id)
}

/// The largest binding number a kernel may declare. Vulkan sets none, but
/// drivers size a descriptor set layout by its largest binding number: a
/// fuzzed module declaring binding 3082270647 made lavapipe ask for 345 GB
/// at layout creation. A kernel's buffers are matched to its bindings in
/// their order, so numbers this large serve no kernel.
pub const MAX_BINDING: u32 = 4095;

/// Reads the compute interface of `words` for entry point `entry`.
pub fn reflect(words: &[u32], entry: &str) -> Result<ShaderInterface> {
    if words.len() < 5 {
        return Err(Error::InvalidSpirv("module shorter than its header".into()));
    }
    if words[0] != MAGIC {
        return Err(Error::InvalidSpirv(format!(
            "bad magic number {:#010x} (expected {MAGIC:#010x})",
            words[0]
        )));
    }
    let version = words[1];
    if !(0x0001_0000..=0x0001_0600).contains(&version) {
        return Err(Error::InvalidSpirv(format!(
            "unsupported SPIR-V version {:#x}",
            version
        )));
    }

    let mut entry_id = None;
    let mut local_size = None;
    let mut local_size_ids = None;
    let mut types = Types::default();
    let mut decorations: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
    let mut member_offsets: HashMap<(u32, u32), u32> = HashMap::new();
    let mut member_non_writable: HashMap<u32, u32> = HashMap::new();
    let mut member_non_readable: HashMap<u32, u32> = HashMap::new();
    let mut variables: Vec<(u32, u32, u32)> = Vec::new(); // (ptr type, id, storage class)

    let mut i = 5;
    while i < words.len() {
        let count = (words[i] >> 16) as usize;
        let op = words[i] & 0xffff;
        if count == 0 || i + count > words.len() {
            return Err(Error::InvalidSpirv(format!(
                "instruction at word {i} (opcode {op}) has word count {count} running past the end ({} words)",
                words.len()
            )));
        }
        let a = &words[i + 1..i + count];
        let arg = |k: usize| -> Result<u32> {
            a.get(k).copied().ok_or_else(|| {
                Error::InvalidSpirv(format!("opcode {op} at word {i} has too few operands"))
            })
        };
        match op {
            OP_ENTRY_POINT => {
                let model = arg(0)?;
                let id = arg(1)?;
                let name = literal_string(&a[2..]);
                if model == EXEC_MODEL_GLCOMPUTE && name == entry {
                    entry_id = Some(id);
                }
            }
            OP_EXECUTION_MODE
                if a.len() >= 2 && Some(a[0]) == entry_id && a[1] == MODE_LOCAL_SIZE =>
            {
                local_size = Some([arg(2)?, arg(3)?, arg(4)?]);
            }
            OP_EXECUTION_MODE_ID
                if a.len() >= 2 && Some(a[0]) == entry_id && a[1] == MODE_LOCAL_SIZE_ID =>
            {
                local_size_ids = Some([arg(2)?, arg(3)?, arg(4)?]);
            }
            OP_TYPE_BOOL => {
                types.sizes.insert(arg(0)?, 4);
            }
            OP_TYPE_INT | OP_TYPE_FLOAT => {
                types.sizes.insert(arg(0)?, u64::from(arg(1)?) / 8);
            }
            OP_TYPE_VECTOR | OP_TYPE_MATRIX => {
                let elem = types.sizes.get(&arg(1)?).copied().unwrap_or(0);
                types.sizes.insert(arg(0)?, elem * u64::from(arg(2)?));
            }
            OP_TYPE_ARRAY => {
                types.arrays.insert(arg(0)?, (arg(1)?, Some(arg(2)?)));
            }
            OP_TYPE_RUNTIME_ARRAY => {
                types.arrays.insert(arg(0)?, (arg(1)?, None));
            }
            OP_TYPE_STRUCT => {
                types.structs.insert(arg(0)?, a[1..].to_vec());
            }
            OP_TYPE_POINTER => {
                types.pointers.insert(arg(0)?, (arg(1)?, arg(2)?));
            }
            OP_CONSTANT | OP_SPEC_CONSTANT => {
                let ty = arg(0)?;
                let id = arg(1)?;
                let lo = u64::from(arg(2)?);
                let hi = a.get(3).map_or(0, |&h| u64::from(h));
                let _ = ty;
                types.constants.insert(id, lo | (hi << 32));
            }
            OP_VARIABLE => {
                variables.push((arg(0)?, arg(1)?, arg(2)?));
            }
            OP_DECORATE => {
                let target = arg(0)?;
                let dec = arg(1)?;
                let value = a.get(2).copied().unwrap_or(0);
                decorations.entry(target).or_default().push((dec, value));
            }
            OP_MEMBER_DECORATE => {
                let (s, m, dec) = (arg(0)?, arg(1)?, arg(2)?);
                if dec == DEC_OFFSET {
                    member_offsets.insert((s, m), arg(3)?);
                } else if dec == DEC_NON_WRITABLE {
                    *member_non_writable.entry(s).or_default() += 1;
                } else if dec == DEC_NON_READABLE {
                    *member_non_readable.entry(s).or_default() += 1;
                }
            }
            _ => {}
        }
        i += count;
    }

    let entry_id = entry_id
        .ok_or_else(|| Error::InvalidSpirv(format!("no GLCompute entry point named {entry:?}")))?;
    let _ = entry_id;
    let (local_size, uses_local_size_id) = match (local_size, local_size_ids) {
        (Some(s), _) => (s, false),
        (None, Some(ids)) => {
            let mut s = [0u32; 3];
            for (k, id) in ids.iter().enumerate() {
                s[k] = *types.constants.get(id).ok_or_else(|| {
                    Error::InvalidSpirv("LocalSizeId refers to a non-constant".into())
                })? as u32;
            }
            (s, true)
        }
        (None, None) => {
            return Err(Error::InvalidSpirv(
                "the entry point declares no work-group size".into(),
            ))
        }
    };
    if local_size.contains(&0) {
        return Err(Error::InvalidSpirv(format!(
            "work-group size {local_size:?} has a zero dimension"
        )));
    }

    let has = |id: u32, dec: u32| {
        decorations
            .get(&id)
            .is_some_and(|d| d.iter().any(|&(k, _)| k == dec))
    };
    let value = |id: u32, dec: u32| {
        decorations
            .get(&id)
            .and_then(|d| d.iter().find(|&&(k, _)| k == dec).map(|&(_, v)| v))
    };

    let mut bindings = Vec::new();
    let mut push_constant_bytes = 0u32;
    let mut shared_memory_bytes = 0u64;
    for &(ptr_ty, var, class) in &variables {
        let Some(&(_, pointee)) = types.pointers.get(&ptr_ty) else {
            continue;
        };
        match class {
            SC_WORKGROUP => {
                let size = type_size(&types, &member_offsets, &decorations, pointee, 0);
                shared_memory_bytes = shared_memory_bytes.saturating_add(size.unwrap_or(0));
            }
            SC_PUSH_CONSTANT => {
                let size = type_size(&types, &member_offsets, &decorations, pointee, 0)?;
                push_constant_bytes = push_constant_bytes.max(size as u32);
            }
            SC_STORAGE_BUFFER | SC_UNIFORM | SC_UNIFORM_CONSTANT => {
                let set = value(var, DEC_DESCRIPTOR_SET).unwrap_or(0);
                let binding = value(var, DEC_BINDING).ok_or_else(|| {
                    Error::InvalidSpirv(format!("resource variable %{var} has no Binding"))
                })?;
                let is_storage = class == SC_STORAGE_BUFFER
                    || (class == SC_UNIFORM && has(pointee, DEC_BUFFER_BLOCK));
                if !is_storage {
                    let what = if class == SC_UNIFORM && has(pointee, DEC_BLOCK) {
                        "a uniform buffer"
                    } else {
                        "an image, sampler or other opaque resource"
                    };
                    return Err(Error::Interface(format!(
                        "binding {binding} is {what}; coexec kernels use storage buffers only"
                    )));
                }
                if set != 0 {
                    return Err(Error::Interface(format!(
                        "binding {binding} is in descriptor set {set}; coexec kernels use set 0 only"
                    )));
                }
                if binding > MAX_BINDING {
                    return Err(Error::Interface(format!(
                        "binding {binding} is past coexec's largest binding number, {MAX_BINDING} (a descriptor set layout is sized by its largest binding number)"
                    )));
                }
                let members = types.structs.get(&pointee).map_or(0, |m| m.len()) as u32;
                // On the variable, or on every member of its block (what
                // glslang emits for `readonly` / `writeonly` blocks).
                let marked = |dec: u32, per_member: &HashMap<u32, u32>| {
                    has(var, dec)
                        || (members > 0
                            && per_member.get(&pointee).copied().unwrap_or(0) >= members)
                };
                let elem_stride = match types.structs.get(&pointee).map(Vec::as_slice) {
                    Some(&[only]) => types
                        .arrays
                        .get(&only)
                        .filter(|(_, len)| len.is_none())
                        .and_then(|_| value(only, DEC_ARRAY_STRIDE)),
                    _ => None,
                };
                bindings.push(SpirvBinding {
                    binding,
                    read_only: marked(DEC_NON_WRITABLE, &member_non_writable),
                    write_only: marked(DEC_NON_READABLE, &member_non_readable),
                    elem_stride,
                });
            }
            _ => {}
        }
    }
    bindings.sort_by_key(|b| b.binding);
    if let Some(w) = bindings.windows(2).find(|w| w[0].binding == w[1].binding) {
        return Err(Error::Interface(format!(
            "binding {} is declared twice",
            w[0].binding
        )));
    }
    Ok(ShaderInterface {
        local_size,
        bindings,
        push_constant_bytes,
        uses_local_size_id,
        shared_memory_bytes,
    })
}

fn type_size(
    t: &Types,
    offsets: &HashMap<(u32, u32), u32>,
    decorations: &HashMap<u32, Vec<(u32, u32)>>,
    id: u32,
    depth: u32,
) -> Result<u64> {
    if depth > 32 {
        return Err(Error::InvalidSpirv("type nesting deeper than 32".into()));
    }
    if let Some(&s) = t.sizes.get(&id) {
        return Ok(s);
    }
    if let Some(members) = t.structs.get(&id) {
        let mut end = 0u64;
        let mut running = 0u64;
        for (k, &m) in members.iter().enumerate() {
            let size = type_size(t, offsets, decorations, m, depth + 1)?;
            let off = offsets
                .get(&(id, k as u32))
                .map_or(running, |&o| u64::from(o));
            running = off + size;
            end = end.max(off + size);
        }
        return Ok(end);
    }
    if let Some(&(elem, len)) = t.arrays.get(&id) {
        let Some(len) = len else { return Ok(0) };
        let n = t.constants.get(&len).copied().unwrap_or(0);
        let stride = decorations
            .get(&id)
            .and_then(|d| d.iter().find(|&&(k, _)| k == DEC_ARRAY_STRIDE))
            .map(|&(_, v)| u64::from(v));
        let stride = match stride {
            Some(s) => s,
            None => type_size(t, offsets, decorations, elem, depth + 1)?,
        };
        return Ok(n.saturating_mul(stride));
    }
    Err(Error::InvalidSpirv(format!(
        "push-constant block uses type %{id} whose size is unknown"
    )))
}

fn literal_string(words: &[u32]) -> String {
    let mut bytes = Vec::new();
    'outer: for w in words {
        for b in w.to_le_bytes() {
            if b == 0 {
                break 'outer;
            }
            bytes.push(b);
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

// Every test here builds its modules from GLSL: the lean build (no `glsl`
// feature) runs none of them; its reflection code is the same.
#[cfg(all(test, feature = "glsl"))]
mod tests {
    use super::*;

    fn compile(src: &str) -> Vec<u32> {
        crate::shader::compile_glsl(src, "test.comp").unwrap()
    }

    #[test]
    fn validator_accepts_compiled_modules_and_names_a_broken_rule() {
        let w = compile("#version 450\nlayout(local_size_x = 8) in;\nvoid main() {}");
        validate(&w, ash::vk::API_VERSION_1_1).unwrap();
        validate(&w, ash::vk::API_VERSION_1_2).unwrap();
        validate(&w, ash::vk::API_VERSION_1_3).unwrap();
        // The same module as SPIR-V 1.5: a Vulkan 1.2 device takes it, a
        // 1.1 device (SPIR-V 1.3 at most) does not.
        let mut v15 = w.clone();
        v15[1] = 0x0001_0500;
        validate(&v15, ash::vk::API_VERSION_1_2).unwrap();
        assert!(validate(&v15, ash::vk::API_VERSION_1_1).is_err());
        // Glue the first instruction after the header to the next one by
        // widening its word count: the stream still parses, the rules break.
        let mut bad = w.clone();
        let first = bad[5] >> 16;
        let second = bad[5 + first as usize] >> 16;
        bad[5] = ((first + second) << 16) | (bad[5] & 0xffff);
        let err = validate(&bad, ash::vk::API_VERSION_1_2).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidSpirv(m) if m.contains("SPIR-V rule")),
            "{err}"
        );
        assert!(validate(&[], ash::vk::API_VERSION_1_2).is_err());
    }

    #[test]
    fn reflects_saxpy_interface() {
        let w = compile(
            r#"#version 450
            layout(local_size_x = 64, local_size_y = 2) in;
            layout(std430, binding = 0) readonly buffer X { float x[]; };
            layout(std430, binding = 1) buffer Y { float y[]; };
            layout(push_constant) uniform P { float a; uint n; } p;
            void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) y[i] += p.a * x[i]; }"#,
        );
        let r = reflect(&w, "main").unwrap();
        assert_eq!(r.local_size, [64, 2, 1]);
        assert_eq!(
            r.bindings,
            vec![
                SpirvBinding {
                    binding: 0,
                    read_only: true,
                    write_only: false,
                    elem_stride: Some(4),
                },
                SpirvBinding {
                    binding: 1,
                    read_only: false,
                    write_only: false,
                    elem_stride: Some(4),
                }
            ]
        );
        assert_eq!(r.push_constant_bytes, 8);
        assert!(reflect(&w, "other").is_err());
        // `y += a * x` reads what it writes: not safe to run twice.
        assert!(!r.rerun_safe());
    }

    #[test]
    fn reflects_write_only_outputs() {
        let w = compile(
            r#"#version 450
            layout(local_size_x = 64) in;
            layout(std430, binding = 0) readonly buffer X { float x[]; };
            layout(std430, binding = 1) writeonly buffer Y { float y[]; };
            layout(std430, binding = 2) buffer Z { float z[]; };
            void main() { uint i = gl_GlobalInvocationID.x; y[i] = x[i]; z[i] = 1.0; }"#,
        );
        let r = reflect(&w, "main").unwrap();
        let flags: Vec<_> = r
            .bindings
            .iter()
            .map(|b| (b.binding, b.read_only, b.write_only))
            .collect();
        assert_eq!(
            flags,
            vec![(0, true, false), (1, false, true), (2, false, false)]
        );
        // Binding 2 is read-write (as declared, though only written).
        assert!(!r.rerun_safe());
        let only = ShaderInterface {
            bindings: r.bindings[..2].to_vec(),
            ..r.clone()
        };
        assert!(only.rerun_safe());
    }

    #[test]
    fn reflects_element_strides_of_single_array_blocks() {
        let w = compile(
            r#"#version 450
            layout(local_size_x = 64) in;
            layout(std430, binding = 0) readonly buffer A { vec4 a[]; };
            layout(std430, binding = 1) readonly buffer B { uint n; float b[]; };
            struct S { vec2 p; float w; };
            layout(std430, binding = 2) buffer C { S c[]; };
            void main() { uint i = gl_GlobalInvocationID.x; c[i].w = a[i].x + b[i] + float(n); }"#,
        );
        let r = reflect(&w, "main").unwrap();
        let strides: Vec<_> = r.bindings.iter().map(|b| b.elem_stride).collect();
        // vec4: 16 bytes; a block with a header: none; struct {vec2, float}: 16 (std430).
        assert_eq!(strides, vec![Some(16), None, Some(16)]);
    }

    #[test]
    fn rejects_garbage_and_truncation() {
        assert!(matches!(
            words_from_bytes(&[1, 2, 3]),
            Err(Error::InvalidSpirv(_))
        ));
        let w = compile(
            "#version 450\nlayout(local_size_x=1) in; layout(binding=0) buffer B { uint v[]; }; void main(){ v[0]=1u; }",
        );
        let mut bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
        bytes.truncate(bytes.len() - 8);
        let words = words_from_bytes(&bytes).unwrap();
        // Truncation either cuts an instruction (error) or drops trailing
        // ones; never a panic.
        let _ = reflect(&words, "main");
        let mut bad = w.clone();
        bad[0] = 0xdead_beef;
        assert!(
            matches!(reflect(&bad, "main"), Err(Error::InvalidSpirv(m)) if m.contains("magic"))
        );
        let mut broken = w;
        broken[5] = 0xffff_0000 | (broken[5] & 0xffff);
        assert!(matches!(
            reflect(&broken, "main"),
            Err(Error::InvalidSpirv(_))
        ));
    }

    #[test]
    fn rejects_uniform_buffers_and_other_sets() {
        let w = compile(
            "#version 450\nlayout(local_size_x=1) in; layout(binding=0) uniform U { uint v; }; layout(binding=1) buffer B { uint o[]; }; void main(){ o[0]=v; }",
        );
        assert!(
            matches!(reflect(&w, "main"), Err(Error::Interface(m)) if m.contains("uniform buffer"))
        );
        let w = compile(
            "#version 450\nlayout(local_size_x=1) in; layout(set=1, binding=0) buffer B { uint o[]; }; void main(){ o[0]=1u; }",
        );
        assert!(matches!(reflect(&w, "main"), Err(Error::Interface(m)) if m.contains("set 1")));
    }

    /// Work-group memory is summed over the module's `shared` variables,
    /// by their declared types; a module without any declares none.
    #[test]
    fn reflects_the_work_group_memory_declared() {
        let w = compile(
            "#version 450\nlayout(local_size_x=8) in; layout(binding=0) buffer B { float o[]; };\nshared float s[64]; shared vec4 v[8]; shared uint n;\nvoid main(){ s[gl_LocalInvocationID.x] = 1.0; v[gl_LocalInvocationID.x] = vec4(2.0); n = 3u; barrier(); o[0] = s[7] + v[1].x + float(n); }",
        );
        assert_eq!(reflect(&w, "main").unwrap().shared_memory_bytes, 64 * 4 + 8 * 16 + 4);
        let w = compile(
            "#version 450\nlayout(local_size_x=1) in; layout(binding=0) buffer B { uint o[]; }; void main(){ o[0]=1u; }",
        );
        assert_eq!(reflect(&w, "main").unwrap().shared_memory_bytes, 0);
    }

    /// A binding number past [`MAX_BINDING`] is refused before any driver
    /// sizes a layout by it; the largest allowed one is accepted.
    #[test]
    fn a_binding_number_past_the_limit_is_refused() {
        let src = |b: u32| {
            format!("#version 450\nlayout(local_size_x=1) in; layout(binding={b}) buffer B {{ uint o[]; }}; void main(){{ o[0]=1u; }}")
        };
        let ok = reflect(&compile(&src(MAX_BINDING)), "main").unwrap();
        assert_eq!(ok.bindings[0].binding, MAX_BINDING);
        let err = reflect(&compile(&src(MAX_BINDING + 1)), "main");
        assert!(
            matches!(&err, Err(Error::Interface(m)) if m.contains("binding 4096") && m.contains("largest binding number")),
            "{err:?}"
        );
    }
}

/// SPIRV-Tools' validator, which the engine links through shaderc (its
/// combined library carries SPIRV-Tools): only with the feature `glsl`.
#[cfg(feature = "glsl")]
mod tools {
    use std::ffi::{c_char, c_void, CStr};

    /// `spv_target_env` values (libspirv.h).
    pub(super) const SPV_ENV_VULKAN_1_1: u32 = 18;
    pub(super) const SPV_ENV_VULKAN_1_2: u32 = 23;
    pub(super) const SPV_ENV_VULKAN_1_3: u32 = 25;

    /// `spv_position_t` then the start of `spv_diagnostic_t` (libspirv.h).
    #[repr(C)]
    struct Diagnostic {
        line: usize,
        column: usize,
        index: usize,
        error: *const c_char,
    }

    extern "C" {
        fn spvContextCreate(env: u32) -> *mut c_void;
        fn spvContextDestroy(context: *mut c_void);
        fn spvValidateBinary(
            context: *const c_void,
            words: *const u32,
            num_words: usize,
            diagnostic: *mut *mut Diagnostic,
        ) -> i32;
        fn spvDiagnosticDestroy(diagnostic: *mut Diagnostic);
    }

    /// Validates `words` for `env`; the validator's message on failure.
    pub(super) fn validate(words: &[u32], env: u32) -> Result<(), String> {
        // SAFETY: plain constructor; NULL is checked.
        let context = unsafe { spvContextCreate(env) };
        if context.is_null() {
            return Err("SPIRV-Tools could not create a context".into());
        }
        let mut diagnostic: *mut Diagnostic = std::ptr::null_mut();
        // SAFETY: a live context; `words` is valid for `words.len()` reads;
        // `diagnostic` is an out-pointer SPIRV-Tools fills with NULL or an
        // allocation of its own.
        let result =
            unsafe { spvValidateBinary(context, words.as_ptr(), words.len(), &mut diagnostic) };
        let message = if diagnostic.is_null() {
            None
        } else {
            // SAFETY: a diagnostic SPIRV-Tools made, whose layout starts as
            // `Diagnostic`; its `error` is NULL or a NUL-terminated string it
            // owns until the diagnostic is destroyed (below).
            unsafe {
                let d = &*diagnostic;
                Some(if d.error.is_null() {
                    String::new()
                } else {
                    format!(
                        "{} (word {})",
                        CStr::from_ptr(d.error).to_string_lossy(),
                        d.index
                    )
                })
            }
        };
        // SAFETY: each is destroyed exactly once; spvDiagnosticDestroy
        // accepts NULL.
        unsafe {
            spvDiagnosticDestroy(diagnostic);
            spvContextDestroy(context);
        }
        match result {
            0 => Ok(()), // SPV_SUCCESS
            code => Err(message
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| format!("SPIRV-Tools error {code}"))),
        }
    }
}

/// Validates `words` with SPIRV-Tools against the rules of Vulkan
/// `api_version` (1.3 rules for 1.3 and later, 1.2 rules for 1.2, 1.1
/// rules, SPIR-V 1.3 at most, below).
///
/// [`reflect`] only reads what coexec needs; a driver handed a module that
/// breaks other rules may crash (lavapipe does), so modules are validated
/// before any driver sees them.
///
/// Without the cargo feature `glsl` (the lean build links no SPIRV-Tools)
/// this checks nothing and returns `Ok`: only [`reflect`]'s checks apply, so
/// the lean build expects SPIR-V validated ahead of time (`spirv-val`).
#[cfg(feature = "glsl")]
pub fn validate(words: &[u32], api_version: u32) -> Result<()> {
    let env = if api_version >= ash::vk::API_VERSION_1_3 {
        tools::SPV_ENV_VULKAN_1_3
    } else if api_version >= ash::vk::API_VERSION_1_2 {
        tools::SPV_ENV_VULKAN_1_2
    } else {
        tools::SPV_ENV_VULKAN_1_1
    };
    tools::validate(words, env)
        .map_err(|why| Error::InvalidSpirv(format!("the module breaks a SPIR-V rule: {why}")))
}

/// [`validate`] of the lean build: SPIRV-Tools is not linked, so nothing is
/// checked beyond [`reflect`] (see the other build's documentation).
#[cfg(not(feature = "glsl"))]
pub fn validate(_words: &[u32], _api_version: u32) -> Result<()> {
    Ok(())
}
