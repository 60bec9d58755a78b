//! `coexec_run`: checks a run's arguments against the kernel (before
//! reading any memory whose size C declares), locks its buffers, runs it, and
//! turns the engine's errors into C's terms.

use super::callback::{in_cpu_fn, RunView};
use super::handles::{self, BufferObj, EngineObj, KernelObj, BUFFERS, ENGINES, KERNELS};
use super::reduce::{AnyReduction, Spec};
use super::status::{self, guard, FfiError, FfiResult};
use super::types::coexec_status::*;
use super::types::*;
use super::{invalid, name_buf, put, slice, validation_scope};
use ::coexec_engine::{Args, Buffer, Devices, Error, IndexSpace, Kernel, Report, Scheduler};
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::sync::{Arc, RwLockReadGuard, RwLockWriteGuard};

fn index_space(s: coexec_index_space) -> FfiResult<IndexSpace> {
    match s.dims {
        1 => Ok(IndexSpace::D1(s.width)),
        2 => {
            let w = u32::try_from(s.width)
                .map_err(|_| invalid(format!("2-D width {} exceeds 2^32 - 1", s.width)))?;
            let h = u32::try_from(s.height)
                .map_err(|_| invalid(format!("2-D height {} exceeds 2^32 - 1", s.height)))?;
            Ok(IndexSpace::D2 {
                width: w,
                height: h,
            })
        }
        d => Err(invalid(format!(
            "index space dims must be 1 or 2 (got {d})"
        ))),
    }
}

/// # Safety
/// `s.powers` is NULL or valid for `s.num_powers` reads.
unsafe fn scheduler(s: &coexec_scheduler) -> FfiResult<Scheduler> {
    // SAFETY: NULL or readable for `num_powers` values per the contract.
    let powers = unsafe { slice(s.powers, s.num_powers, "scheduler powers") }?;
    let powers = (!powers.is_empty()).then(|| powers.to_vec());
    Ok(match s.kind {
        0 => Scheduler::HGuided {
            powers,
            k: if s.k == 0.0 { 2.0 } else { s.k },
            min_package: s.min_package.max(1),
        },
        1 => Scheduler::Static { powers },
        2 => Scheduler::Dynamic {
            packages: s.packages,
        },
        k => return Err(invalid(format!("unknown coexec_scheduler_kind {k}"))),
    })
}

fn fill_report(r: &Report) -> coexec_report {
    let empty = coexec_device_report {
        name: [0; COEXEC_NAME_MAX],
        kind: coexec_device_kind::COEXEC_DEVICE_KIND_CPU,
        claimants: 0,
        packages: 0,
        items: 0,
        busy_s: 0.0,
        first_start_s: 0.0,
        finish_s: 0.0,
        failed: false,
        declined_s: -1.0,
        upload_bytes: 0,
        download_bytes: 0,
        transfer_s: 0.0,
        energy_j: -1.0,
        cpu_impl: -1,
        note: [0; COEXEC_NAME_MAX],
    };
    let mut devices = [empty; COEXEC_MAX_DEVICES];
    for (o, d) in devices.iter_mut().zip(&r.devices) {
        *o = coexec_device_report {
            name: name_buf(&d.name),
            kind: match d.kind {
                ::coexec_engine::DeviceKind::Cpu => coexec_device_kind::COEXEC_DEVICE_KIND_CPU,
                ::coexec_engine::DeviceKind::Gpu => coexec_device_kind::COEXEC_DEVICE_KIND_GPU,
            },
            claimants: u32::try_from(d.claimants).unwrap_or(u32::MAX),
            packages: d.packages as u64,
            items: d.items,
            busy_s: d.busy_s,
            first_start_s: d.first_start_s,
            finish_s: d.finish_s,
            failed: d.failure.is_some(),
            declined_s: d.declined_s.unwrap_or(-1.0),
            upload_bytes: d.transfers.upload_bytes,
            download_bytes: d.transfers.download_bytes,
            transfer_s: d.transfers.seconds,
            energy_j: -1.0,
            cpu_impl: match d.cpu_impl {
                Some(::coexec_engine::CpuImpl::Native) => 0,
                Some(::coexec_engine::CpuImpl::Spirv) => 1,
                None => -1,
            },
            note: name_buf(d.note.as_deref().unwrap_or_default()),
        };
    }
    if let Some(e) = &r.energy {
        for (o, j) in devices.iter_mut().zip(&e.devices) {
            o.energy_j = j.unwrap_or(-1.0);
        }
    }
    coexec_report {
        time_s: r.time_s,
        items: r.items,
        units: r.units,
        packages: r.package_count() as u64,
        balance: r.balance(),
        balance_raw: r.balance_raw(),
        from_profile: r.from_profile,
        one_time_transfer: r.one_time_transfer,
        memory: match r.memory {
            ::coexec_engine::MemoryPlacement::Staged => coexec_memory::COEXEC_MEMORY_STAGED as u32,
            ::coexec_engine::MemoryPlacement::Auto => coexec_memory::COEXEC_MEMORY_AUTO as u32,
            ::coexec_engine::MemoryPlacement::ZeroCopy => {
                coexec_memory::COEXEC_MEMORY_ZERO_COPY as u32
            }
        },
        num_devices: r.devices.len().min(COEXEC_MAX_DEVICES) as u32,
        devices,
        energy_j: r.joules().unwrap_or(-1.0),
        edp: r.edp().unwrap_or(-1.0),
    }
}

/// One resolved argument of a run.
struct ArgInfo {
    /// The buffer's handle id: the order buffers are locked in.
    id: u64,
    buffer: Arc<BufferObj>,
    write: bool,
    /// Outputs: elements per work-item (>= 1); reductions: elements of the
    /// result (>= 1); 0 for inputs.
    per_item: u64,
    /// The `coexec_access` value.
    access: u32,
    /// A reduction output.
    reduce: Option<Spec>,
    /// The kernel's footprint for it, in the engine's terms (bytes).
    footprint: Option<::coexec_engine::Footprint>,
}

impl ArgInfo {
    /// How C's CPU function sees it.
    fn c_view(&self) -> coexec_cpu_buffer {
        coexec_cpu_buffer {
            data: self.buffer.host_ptr as *mut c_void,
            count: self.buffer.count,
            elem_size: self.buffer.elem_size,
            access: self.access,
            per_item: self.per_item,
        }
    }
}

/// Resolves the C arguments to live buffers of `engine_id`.
fn resolve_args(c_args: &[coexec_arg], engine_id: u64) -> FfiResult<Vec<ArgInfo>> {
    let mut out = Vec::with_capacity(c_args.len());
    for (i, a) in c_args.iter().enumerate() {
        let at = |e: FfiError| FfiError::new(e.code, format!("argument {i}: {}", e.message));
        let buffer = BUFFERS.get(a.buffer.id).map_err(at)?;
        if buffer.engine_id != engine_id {
            return Err(FfiError::new(
                COEXEC_ERROR_FOREIGN_HANDLE,
                format!("argument {i}: the buffer belongs to another engine"),
            ));
        }
        let reduce = Spec::of(a.access, a.per_item, buffer.elem_size).map_err(at)?;
        let write = match a.access {
            0 => false,
            1 => true,
            _ if reduce.is_some() => true,
            v => return Err(invalid(format!("argument {i}: unknown coexec_access {v}"))),
        };
        if let Some(spec) = &reduce {
            if buffer.count < spec.width {
                return Err(FfiError::new(
                    COEXEC_ERROR_BUFFER_TOO_SMALL,
                    format!(
                        "argument {i}: the buffer holds {} elements but the reduction's result has {}",
                        buffer.count, spec.width
                    ),
                ));
            }
            out.push(ArgInfo {
                id: a.buffer.id,
                buffer,
                write,
                per_item: spec.width as u64,
                access: a.access,
                reduce,
                footprint: None,
            });
            continue;
        }
        // `per_item` is ignored for inputs, whatever its value.
        let per_item = if write { a.per_item.max(1) } else { 0 };
        if write {
            usize::try_from(per_item)
                .ok()
                .and_then(|n| n.checked_mul(buffer.elem_size))
                .ok_or_else(|| invalid(format!("argument {i}: per_item {per_item} overflows")))?;
        }
        out.push(ArgInfo {
            id: a.buffer.id,
            buffer,
            write,
            per_item,
            access: a.access,
            reduce: None,
            footprint: None,
        });
    }
    Ok(out)
}

/// Checks what the kernel's shader declares, before anything of the run is
/// read: the push-constant block's size (`push` is read only once it is
/// known to have that size) and each buffer's element size against the
/// binding's array stride.
fn check_interface(k: &Kernel, args: &[ArgInfo], push_size: usize) -> FfiResult {
    let Some(iface) = k.interface() else {
        return Ok(());
    };
    let interface = |m: String| FfiError::new(COEXEC_ERROR_INTERFACE, m);
    if push_size != iface.push_constant_bytes as usize {
        return Err(interface(format!(
            "push_size is {push_size} bytes but the shader's push-constant block takes {} (offset + size of its last member)",
            iface.push_constant_bytes
        )));
    }
    for (i, (a, b)) in args.iter().zip(&iface.bindings).enumerate() {
        let Some(stride) = b.elem_stride else {
            continue;
        };
        if a.buffer.elem_size != stride as usize {
            return Err(interface(format!(
                "argument {i}: the buffer's elements are {} bytes but binding {} declares elements of {stride} bytes (its array stride); allocate the buffer with elem_size {stride}",
                a.buffer.elem_size, b.binding
            )));
        }
    }
    Ok(())
}

/// An engine error of a run, for C. The engine sees every C buffer as bytes
/// (`Buffer<u8>`), so its `BufferTooSmall` counts bytes; C counts elements of
/// the buffer's `elem_size`, so that error is restated in elements.
fn run_error(e: Error, items: u64, args: &[ArgInfo], view: &RunView) -> FfiError {
    match e {
        Error::BufferTooSmall { binding, len, .. } => {
            let i = binding as usize;
            if let Some(a) = args.get(i) {
                let size = a.buffer.elem_size as u64;
                return FfiError::new(
                    COEXEC_ERROR_BUFFER_TOO_SMALL,
                    format!(
                        "argument {i}: the buffer holds {} elements (of {size} bytes) but the index space needs {} ({items} work-items x {} per item)",
                        len / size,
                        items * a.per_item,
                        a.per_item,
                    ),
                );
            }
            e.into()
        }
        Error::KernelFailed { .. } => {
            status::set_last_kernel_code(view.code());
            e.into()
        }
        Error::DispatchLimit { axis: 0, .. } => {
            let mut f = FfiError::from(e);
            f.message.push_str(
                " (no chosen device can dispatch that many work-groups along x; a CPU callback on COEXEC_DEVICE_CPU has no such limit)",
            );
            f
        }
        e => e.into(),
    }
}

/// Each argument's footprint from `kernel`'s declarations, scaled to bytes.
fn add_footprints(infos: &mut [ArgInfo], kernel: &KernelObj) -> FfiResult {
    let declared = kernel.footprints.lock().unwrap_or_else(|p| p.into_inner());
    for (i, (a, f)) in infos.iter_mut().zip(declared.iter()).enumerate() {
        if let Some(f) = f {
            let at = |e: FfiError| FfiError::new(e.code, format!("argument {i}: {}", e.message));
            a.footprint = Some(super::footprint::to_engine(f, a.buffer.elem_size).map_err(at)?);
        }
    }
    Ok(())
}

/// A locked buffer of a run.
enum Lock<'a> {
    Read(RwLockReadGuard<'a, Option<Buffer<u8>>>),
    Write(RwLockWriteGuard<'a, Option<Buffer<u8>>>),
}

/// A buffer borrowed for a run's `Args`.
enum Borrow<'a> {
    Shared(&'a Buffer<u8>),
    Exclusive(Option<&'a mut Buffer<u8>>),
}

/// Each distinct buffer of `args` once, with whether it is written; an
/// output must not appear twice, nor as an input too.
fn distinct_buffers(args: &[ArgInfo]) -> FfiResult<BTreeMap<u64, (&BufferObj, bool)>> {
    let mut distinct: BTreeMap<u64, (&BufferObj, bool)> = BTreeMap::new();
    for (i, a) in args.iter().enumerate() {
        match distinct.get_mut(&a.id) {
            Some((_, w)) if a.write || *w => {
                return Err(invalid(format!(
                    "argument {i}: a buffer given as an output cannot appear in another argument"
                )));
            }
            Some(_) => {}
            None => {
                distinct.insert(a.id, (&a.buffer, a.write));
            }
        }
    }
    Ok(distinct)
}

/// Locks the buffers (in increasing handle id order, one global order with
/// every other run) and runs `f` on the engine's `Args` for them.
fn with_locked_args<R>(args: &[ArgInfo], f: impl FnOnce(Args<'_>) -> FfiResult<R>) -> FfiResult<R> {
    let distinct = distinct_buffers(args)?;
    let mut locks = Vec::with_capacity(distinct.len());
    for (key, (b, write)) in &distinct {
        locks.push((
            *key,
            if *write {
                Lock::Write(handles::write(&b.buffer, "buffer")?)
            } else {
                Lock::Read(handles::read(&b.buffer, "buffer")?)
            },
        ));
    }
    let mut borrows: HashMap<u64, Borrow<'_>> = HashMap::with_capacity(locks.len());
    for (key, lock) in &mut locks {
        let borrow = match lock {
            Lock::Read(g) => Borrow::Shared(g.as_ref().expect("checked by read")),
            Lock::Write(g) => Borrow::Exclusive(Some(g.as_mut().expect("checked by write"))),
        };
        borrows.insert(*key, borrow);
    }
    let mut reds: Vec<AnyReduction> = args
        .iter()
        .filter_map(|a| a.reduce.as_ref())
        .map(AnyReduction::new)
        .collect();
    let mut next_red = reds.iter_mut();
    let mut run_args = Args::new();
    for a in args {
        if a.reduce.is_some() {
            let r = next_red.next().expect("one per reduction argument");
            run_args = r.add(run_args);
            continue;
        }
        run_args = match borrows.get_mut(&a.id) {
            Some(Borrow::Shared(b)) => run_args.input(*b).element_size(a.buffer.elem_size),
            Some(Borrow::Exclusive(b)) => {
                let b = b.take().expect("outputs appear once (checked above)");
                // Elements per item in bytes: checked not to overflow.
                run_args
                    .output_per_item(b, a.per_item as usize * a.buffer.elem_size)
                    .element_size(a.buffer.elem_size)
            }
            None => unreachable!("every argument was resolved"),
        };
        if let Some(fp) = a.footprint {
            run_args = run_args.footprint(fp);
        }
    }
    let r = f(run_args)?;
    // The results, into the reductions' buffers.
    for (a, red) in args.iter().filter(|a| a.reduce.is_some()).zip(&reds) {
        if let Some(Borrow::Exclusive(Some(b))) = borrows.get_mut(&a.id) {
            let bytes = red.value_bytes();
            b.as_mut_slice()[..bytes.len()].copy_from_slice(bytes);
        }
    }
    Ok(r)
}

/// The devices of a `COEXEC_DEVICE_*` mask.
fn devices_of(mask: u32) -> FfiResult<Devices> {
    const CPU: u32 = coexec_device_mask::COEXEC_DEVICE_CPU as u32;
    const GPU: u32 = coexec_device_mask::COEXEC_DEVICE_GPU as u32;
    const GPU0: u32 = coexec_device_mask::COEXEC_DEVICE_GPU0 as u32;
    if mask == 0 {
        return Err(invalid(
            "devices must be a non-empty combination of COEXEC_DEVICE_CPU, COEXEC_DEVICE_GPU and COEXEC_DEVICE_GPU0 << i",
        ));
    }
    Ok(Devices {
        cpu: mask & CPU != 0,
        gpu: mask & GPU != 0,
        gpus: u64::from(mask / GPU0),
    })
}

/// The live engine and kernel of a run, checked to belong together.
pub(crate) fn engine_and_kernel(
    engine: coexec_engine,
    kernel: coexec_kernel,
) -> FfiResult<(Arc<EngineObj>, Arc<KernelObj>)> {
    let eobj = ENGINES.get(engine.id)?;
    let kobj = KERNELS.get(kernel.id)?;
    if kobj.engine_id != eobj.engine_id {
        return Err(FfiError::new(
            COEXEC_ERROR_FOREIGN_HANDLE,
            "the kernel belongs to another engine",
        ));
    }
    Ok((eobj, kobj))
}

/// A run's arguments from C: at most `COEXEC_MAX_ARGS` of them (an
/// argument error past that), read as [`slice`] does.
///
/// # Safety
/// As for [`slice`]: when `num_args > 0`, `args` is NULL or valid for
/// `num_args` reads.
pub(super) unsafe fn run_args<'a>(
    args: *const coexec_arg,
    num_args: usize,
) -> FfiResult<&'a [coexec_arg]> {
    if num_args > COEXEC_MAX_ARGS {
        return Err(invalid(format!(
            "num_args is {num_args}; a run takes at most COEXEC_MAX_ARGS ({COEXEC_MAX_ARGS}) buffers"
        )));
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { slice(args, num_args, "args") }
}

/// Runs `kernel` over `space` on the devices in `devices` (`COEXEC_DEVICE_*`
/// bits), blocking until every work-item is done, and fills `*report` (may be
/// NULL).
///
/// `args[0..num_args]` are the buffers in binding order (`num_args` at most
/// `COEXEC_MAX_ARGS`); a buffer may be given as an input several times but
/// as an output only once and never as both. Where the shader's binding is
/// one array (`buffer B { float x[]; }`), the buffer's `elem_size` must be
/// that array's stride (4 for `float`, 16 for `vec4`), else
/// `COEXEC_ERROR_INTERFACE`. `sched` may be NULL for HGuided defaults.
/// `space` counts work-items; the GPU runs whole work-groups, so the shader
/// must bound-check its ids against the size you pass in the push constants
/// (see `coexec_index_space`). A 1-D run that uses the GPU may have at most
/// the device's `maxComputeWorkGroupCount[0]` work-groups (65535 on some
/// devices: 4,194,240 items at local size 64), even when the CPU takes part;
/// beyond that it is rejected with `COEXEC_ERROR_INVALID_ARGUMENT` (use a 2-D
/// index space, a larger work-group, or the CPU alone).
///
/// `push[0..push_size]` are the push-constant bytes (the run's scalar
/// arguments), given to the shader's `layout(push_constant)` block and, as
/// the same bytes, to the CPU function (`args->push`). For a kernel with a
/// shader, `push_size` must equal the size of the shader's block exactly
/// (the end of its last member: offset + size, without trailing padding),
/// whichever devices run: any other size is rejected with
/// `COEXEC_ERROR_INTERFACE` before `push` is read. 0 (and `push` NULL) when
/// the shader has none. The bytes are copied as they are, so the C struct must
/// put every member at the offset the GLSL block gives it: std430 rules (the
/// default for push-constant blocks) or explicit `layout(offset = N)`.
/// Scalars (`float`, `int`, `uint`) match `float`, `int32_t`, `uint32_t`
/// packed in order, e.g. `{ float a; uint n; }` is
/// `struct { float a; uint32_t n; }`, 8 bytes; `vec2` is 8-aligned and
/// `vec3`/`vec4` 16-aligned, so pad the C struct to match, and mind a C
/// struct's own trailing padding (`sizeof` may exceed the block's size).
///
/// Outputs may be read-write or `writeonly` in the shader; elements that no
/// work-item writes keep their previous contents (nothing is cleared).
///
/// While the run is in flight, C code must not access the outputs' memory
/// except through the CPU function, which must write only the elements of its
/// call's items. Runs on one engine execute one at a time; a run that needs
/// a buffer another run is writing waits for it. Calling `coexec_run` from a
/// CPU function returns `COEXEC_ERROR_BUSY`. When the CPU function returns
/// non-zero, the run returns `COEXEC_ERROR_KERNEL_FAILED` (see
/// `coexec_cpu_fn`); a GPU package running past `gpu_timeout_s` is handled
/// as `coexec_engine_options.gpu_timeout_s` says.
///
/// # Safety
/// `args` is valid for `num_args` reads (may be NULL only when `num_args` is
/// 0; otherwise NULL is rejected with `COEXEC_ERROR_NULL_POINTER`); `push`
/// likewise for `push_size` bytes; `sched` is NULL (defaults) or valid, and
/// its `powers` valid for `num_powers` reads (NULL with `num_powers` > 0 is
/// rejected); `report` is NULL (not wanted) or writable.
#[no_mangle]
pub unsafe extern "C" fn coexec_run(
    engine: coexec_engine,
    kernel: coexec_kernel,
    args: *const coexec_arg,
    num_args: usize,
    push: *const c_void,
    push_size: usize,
    space: coexec_index_space,
    sched: *const coexec_scheduler,
    devices: u32,
    report: *mut coexec_report,
) -> coexec_status {
    guard("coexec_run", || {
        let call = RunCall {
            engine,
            kernel,
            args,
            num_args,
            push,
            push_size,
            space,
            units: None,
            sched,
            devices,
            report,
        };
        // SAFETY: this function's contract.
        unsafe { call.run() }
    })
}

/// Runs the units `first_unit .. end_unit` of `space` only, as
/// `coexec_run` runs all of them: work-groups in 1-D, rows of work-groups
/// in 2-D (`coexec_kernel_units` gives how many a space has).
///
/// The run is a part of the whole space's: GPU packages are dispatched at
/// their true base work-group (`gl_GlobalInvocationID` and `gl_WorkGroupID`
/// are the space's), the CPU function gets the space's item ids, outputs
/// must hold the whole space's items, and a reduction combines the
/// sub-range's work-groups only. What the kernel learns is kept for the
/// whole space, so consecutive runs of sub-ranges of one space reuse it.
/// The report's `units` and `items` count the sub-range. An empty range, or
/// one reaching past the space's units, is `COEXEC_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
/// As for `coexec_run`.
#[no_mangle]
pub unsafe extern "C" fn coexec_run_range(
    engine: coexec_engine,
    kernel: coexec_kernel,
    args: *const coexec_arg,
    num_args: usize,
    push: *const c_void,
    push_size: usize,
    space: coexec_index_space,
    first_unit: u64,
    end_unit: u64,
    sched: *const coexec_scheduler,
    devices: u32,
    report: *mut coexec_report,
) -> coexec_status {
    guard("coexec_run_range", || {
        let call = RunCall {
            engine,
            kernel,
            args,
            num_args,
            push,
            push_size,
            space,
            units: Some(first_unit..end_unit),
            sched,
            devices,
            report,
        };
        // SAFETY: this function's contract (that of `coexec_run`).
        unsafe { call.run() }
    })
}

/// Writes to `*units` how many units `space` has for `kernel`: its
/// work-groups in 1-D, its rows of work-groups in 2-D (what
/// `coexec_run_range` takes ranges of). An empty space is
/// `COEXEC_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
/// `units` is writable (NULL is rejected with `COEXEC_ERROR_NULL_POINTER`).
#[no_mangle]
pub unsafe extern "C" fn coexec_kernel_units(
    kernel: coexec_kernel,
    space: coexec_index_space,
    units: *mut u64,
) -> coexec_status {
    guard("coexec_kernel_units", || {
        let space = index_space(space)?;
        let kobj = KERNELS.get(kernel.id)?;
        let kg = handles::read(&kobj.kernel, "kernel")?;
        let n = kg.as_ref().expect("checked by read").units(space)?;
        // SAFETY: NULL (rejected) or writable per the contract.
        unsafe { put(units, n, "units") }
    })
}

/// The arguments of `coexec_run` and `coexec_run_range` (`units`: the
/// sub-range, `None` for the whole space).
pub(crate) struct RunCall {
    pub(crate) engine: coexec_engine,
    pub(crate) kernel: coexec_kernel,
    pub(crate) args: *const coexec_arg,
    pub(crate) num_args: usize,
    pub(crate) push: *const c_void,
    pub(crate) push_size: usize,
    pub(crate) space: coexec_index_space,
    pub(crate) units: Option<std::ops::Range<u64>>,
    pub(crate) sched: *const coexec_scheduler,
    pub(crate) devices: u32,
    pub(crate) report: *mut coexec_report,
}

impl RunCall {
    /// The run.
    ///
    /// # Safety
    /// The pointers are as `coexec_run`'s contract says.
    pub(crate) unsafe fn run(self) -> FfiResult<()> {
        let RunCall {
            engine,
            kernel,
            args,
            num_args,
            push,
            push_size,
            space,
            units,
            sched,
            devices,
            report,
        } = self;
        if in_cpu_fn() {
            return Err(FfiError::new(
                COEXEC_ERROR_BUSY,
                "coexec_run was called from inside a CPU function (it would deadlock)",
            ));
        }
        // SAFETY: NULL or readable for `num_args` per the contract.
        let c_args = unsafe { run_args(args, num_args) }?;
        let scheduler = if sched.is_null() {
            Scheduler::hguided()
        } else {
            // SAFETY: non-null and readable per the contract, including powers.
            unsafe { scheduler(&sched.read_unaligned()) }?
        };
        let space = index_space(space)?;
        let devices = devices_of(devices)?;
        let (eobj, kobj) = engine_and_kernel(engine, kernel)?;
        let mut infos = resolve_args(c_args, eobj.engine_id)?;
        add_footprints(&mut infos, &kobj)?;
        // Lock: engine, kernel, then buffers (one global order, so concurrent
        // runs cannot deadlock; destroy/free never waits).
        let eg = handles::read(&eobj.engine, "engine")?;
        let e = eg.as_ref().expect("checked by read");
        let kg = handles::read(&kobj.kernel, "kernel")?;
        let k = kg.as_ref().expect("checked by read");
        check_interface(k, &infos, push_size)?;
        // SAFETY: NULL or readable for `push_size` bytes per the contract;
        // for a kernel with a shader, `push_size` is the block's size (checked).
        let push = unsafe { slice(push.cast::<u8>(), push_size, "push") }?;
        let view = RunView::new(infos.iter().map(ArgInfo::c_view).collect());
        let r = validation_scope(e, || {
            with_locked_args(&infos, |run_args| {
                let run_args = run_args.push_bytes(push).context(&view);
                match units.clone() {
                    None => e.run(k, run_args, space, &scheduler, devices),
                    Some(u) => e.run_range(k, run_args, space, u, &scheduler, devices),
                }
                .map_err(|err| run_error(err, space.items(), &infos, &view))
            })
        })?;
        if !report.is_null() {
            // SAFETY: non-null and writable per the contract.
            unsafe { put(report, fill_report(&r), "report") }?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod device_mask_tests {
    use super::devices_of;
    use coexec_engine::Devices;

    /// Bit 0: the CPU; bit 1: every GPU; bit 2 + i: engine GPU i.
    #[test]
    fn masks_name_the_cpu_every_gpu_or_gpus_by_index() {
        assert_eq!(devices_of(1).unwrap(), Devices::CPU);
        assert_eq!(devices_of(2).unwrap(), Devices::GPU);
        assert_eq!(devices_of(3).unwrap(), Devices::ALL);
        assert_eq!(devices_of(4).unwrap(), Devices::gpu(0));
        assert_eq!(
            devices_of(1 | (4 << 1)).unwrap(),
            Devices::gpu(1).with_cpu()
        );
        assert_eq!(
            devices_of(4 << 29).unwrap(),
            Devices::gpu(29),
            "the highest GPU bit"
        );
        assert!(devices_of(0).is_err());
    }
}
