//! Kernels, their arguments, packages and the CPU view of arguments.

use super::footprint::Footprint;
use crate::error::{Error, Result};
use crate::mem::{Buffer, RawBuffer};
use crate::vk::{ComputePipeline, Groups, ShaderInterface};
use std::any::{Any, TypeId};
use std::ops::Range;
use std::sync::Arc;

/// The index space of a run, in work-items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexSpace {
    /// `n` work-items along x.
    D1(u64),
    /// An image of `width` x `height` work-items, split into whole rows of
    /// work-groups.
    D2 {
        /// Items along x.
        width: u32,
        /// Items along y.
        height: u32,
    },
}

impl IndexSpace {
    /// Total work-items.
    pub fn items(&self) -> u64 {
        match *self {
            IndexSpace::D1(n) => n,
            IndexSpace::D2 { width, height } => u64::from(width) * u64::from(height),
        }
    }
}

impl std::fmt::Display for IndexSpace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexSpace::D1(n) => write!(f, "{n}"),
            IndexSpace::D2 { width, height } => write!(f, "{width}x{height}"),
        }
    }
}

/// How units (the scheduler's atoms) map to work-items for one run.
///
/// A run covers the units `first .. first + units` of its index space (all
/// of them unless it runs a sub-range, see [`Engine::run_range`]). The
/// scheduler, the queue and the plan count the run's own units from 0;
/// [`package`](Self::package) and [`dispatch`](Self::dispatch) turn them
/// into the space's units, so CPU packages see global item ids and GPU
/// dispatches their true base work-group.
///
/// In 2-D a unit is a row of work-groups, or, for a kernel that takes
/// tiles ([`Kernel::with_tiles`]), one work-group in row-major order: a
/// package of such units is then up to three rectangles (the end of one
/// row of groups, whole rows, the start of another), its
/// [`pieces`](Self::pieces).
///
/// [`Engine::run_range`]: crate::Engine::run_range
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) space: IndexSpace,
    pub(crate) local: [u32; 3],
    /// Work-groups along x (2-D: per row of groups).
    pub(crate) groups_x: u64,
    /// Units of the whole space: work-groups (1-D, tiled 2-D) or rows of
    /// work-groups (2-D).
    pub(crate) total: u64,
    /// The space's unit that is the run's unit 0.
    pub(crate) first: u64,
    /// Units of the run.
    pub(crate) units: u64,
    /// 2-D units are work-groups (see the type's docs).
    pub(crate) tiles: bool,
}

/// Units of `space` with work-groups of `local`: work-groups (1-D, and
/// 2-D with `tiles`) or rows of work-groups (2-D); the number of
/// work-groups along x.
fn units_of(space: IndexSpace, local: [u32; 3], tiles: bool) -> (u64, u64) {
    let (lx, ly) = (u64::from(local[0].max(1)), u64::from(local[1].max(1)));
    match space {
        IndexSpace::D1(n) => (n.div_ceil(lx), n.div_ceil(lx)),
        IndexSpace::D2 { width, height } => {
            let (gx, gy) = (u64::from(width).div_ceil(lx), u64::from(height).div_ceil(ly));
            (if tiles { gx * gy } else { gy }, gx)
        }
    }
}

/// A rectangle of work-groups: columns `x` of the rows `y` of groups.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rect {
    x: Range<u64>,
    y: Range<u64>,
}

impl Geometry {
    /// The geometry of a run over all of `space`, with 2-D units of one
    /// work-group where `tiles`.
    pub(crate) fn new(space: IndexSpace, local: [u32; 3], tiles: bool) -> Result<Self> {
        if space.items() == 0 {
            return Err(Error::EmptyRange);
        }
        let tiles = tiles && matches!(space, IndexSpace::D2 { .. });
        let (total, groups_x) = units_of(space, local, tiles);
        Ok(Geometry {
            space,
            local,
            groups_x,
            total,
            first: 0,
            units: total,
            tiles,
        })
    }

    /// The geometry of a run over the units `range` of `space`: an error
    /// where the space is empty, or the range is empty or reaches past
    /// the space's units.
    pub(crate) fn sub_range(
        space: IndexSpace,
        local: [u32; 3],
        tiles: bool,
        range: Range<u64>,
    ) -> Result<Self> {
        let whole = Geometry::new(space, local, tiles)?;
        if range.start >= range.end || range.end > whole.total {
            return Err(Error::SubRange {
                start: range.start,
                end: range.end,
                units: whole.total,
            });
        }
        Ok(Geometry {
            first: range.start,
            units: range.end - range.start,
            ..whole
        })
    }

    /// Rows of work-groups: 1 in 1-D.
    pub(crate) fn groups_y(&self) -> u64 {
        match self.space {
            IndexSpace::D1(_) => 1,
            IndexSpace::D2 { height, .. } => {
                u64::from(height).div_ceil(u64::from(self.local[1].max(1)))
            }
        }
    }

    /// Work-groups in one unit: 1 (1-D, tiled 2-D) or a row of groups
    /// (2-D).
    pub(crate) fn groups_per_unit(&self) -> u64 {
        match self.space {
            IndexSpace::D2 { .. } if !self.tiles => self.groups_x.max(1),
            _ => 1,
        }
    }

    /// The rectangles of work-groups that the space's `units` cover (2-D
    /// only; at most three, see the type's docs).
    fn rects(&self, units: &Range<u64>) -> impl Iterator<Item = Rect> {
        let gx = self.groups_x.max(1);
        let mut out: [Option<Rect>; 3] = [None, None, None];
        if !self.tiles {
            out[0] = Some(Rect {
                x: 0..gx,
                y: units.clone(),
            });
        } else if units.start < units.end {
            let (a, b) = (units.start, units.end);
            let (ya, yb) = (a / gx, (b - 1) / gx);
            if ya == yb {
                out[0] = Some(Rect {
                    x: a % gx..(b - 1) % gx + 1,
                    y: ya..ya + 1,
                });
            } else {
                // The end of row `ya`, whole rows, the start of row `yb`.
                let body = a.div_ceil(gx)..b / gx;
                if a % gx != 0 {
                    out[0] = Some(Rect {
                        x: a % gx..gx,
                        y: ya..ya + 1,
                    });
                }
                if body.start < body.end {
                    out[1] = Some(Rect { x: 0..gx, y: body });
                }
                if b % gx != 0 {
                    out[2] = Some(Rect {
                        x: 0..b % gx,
                        y: yb..yb + 1,
                    });
                }
            }
        }
        out.into_iter().flatten()
    }

    /// The package of a rectangle of work-groups (2-D), clipped to the
    /// space; `units` its units.
    fn rect_package(&self, r: &Rect, units: Range<u64>) -> Package {
        let IndexSpace::D2 { width, height } = self.space else {
            unreachable!("rectangles are 2-D only");
        };
        let (lx, ly) = (u64::from(self.local[0].max(1)), u64::from(self.local[1].max(1)));
        let clip = |v: u64, max: u32| v.min(u64::from(max)) as u32;
        let rows = clip(r.y.start * ly, height)..clip(r.y.end * ly, height);
        let cols = clip(r.x.start * lx, width)..clip(r.x.end * lx, width);
        let w = u64::from(width);
        let items = match rows.end > rows.start {
            true => {
                u64::from(rows.start) * w + u64::from(cols.start)
                    ..u64::from(rows.end - 1) * w + u64::from(cols.end)
            }
            false => u64::from(rows.start) * w..u64::from(rows.start) * w,
        };
        Package {
            units,
            items,
            rows: Some(rows),
            cols,
            width,
        }
    }

    /// The package of the run's `units`, in the space's units and items.
    /// A tiled package that is not one rectangle (see
    /// [`pieces`](Self::pieces)) is given as the whole rows it spans: a
    /// superset, for what it reads and for records.
    pub(crate) fn package(&self, units: Range<u64>) -> Package {
        let units = units.start + self.first..units.end + self.first;
        match self.space {
            IndexSpace::D1(n) => {
                let lx = u64::from(self.local[0].max(1));
                Package {
                    items: (units.start * lx).min(n)..(units.end * lx).min(n),
                    rows: None,
                    cols: 0..0,
                    width: 0,
                    units,
                }
            }
            IndexSpace::D2 { .. } => {
                let mut rects = self.rects(&units);
                let first = rects.next();
                match (first, rects.next()) {
                    (Some(r), None) => self.rect_package(&r, units),
                    (first, _) => {
                        let gx = self.groups_x.max(1);
                        let y = match first {
                            Some(_) => units.start / gx..(units.end - 1) / gx + 1,
                            None => units.start / gx..units.start / gx,
                        };
                        self.rect_package(&Rect { x: 0..gx, y }, units)
                    }
                }
            }
        }
    }

    /// The run's `units` as packages that are each one rectangle (the CPU
    /// closure is called once per piece): the package itself, except for
    /// a tiled 2-D package that starts or ends inside a row of groups.
    pub(crate) fn pieces(&self, units: Range<u64>) -> impl Iterator<Item = Package> + '_ {
        let whole = !self.tiles;
        let mut out: [Option<Package>; 3] = [None, None, None];
        if whole {
            out[0] = Some(self.package(units));
        } else {
            let u = units.start + self.first..units.end + self.first;
            let gx = self.groups_x.max(1);
            for (slot, r) in out.iter_mut().zip(self.rects(&u)) {
                let first = r.y.start * gx + r.x.start;
                let last = (r.y.end - 1) * gx + r.x.end;
                *slot = Some(self.rect_package(&r, first..last));
            }
        }
        out.into_iter().flatten()
    }

    /// The work-items of the run's `units` (of their pieces: a tiled
    /// package's [`package`](Self::package) spans more).
    pub(crate) fn items_in(&self, units: Range<u64>) -> u64 {
        self.pieces(units).map(|p| p.len()).sum()
    }

    /// The work-groups of a dispatch for the run's `units`: the bases are
    /// the space's, so shaders index globally.
    pub(crate) fn dispatch(&self, units: &Range<u64>) -> Groups {
        let start = units.start + self.first;
        let n = units.end - units.start;
        match self.space {
            IndexSpace::D1(_) => Groups::one([start as u32, 0, 0], [n as u32, 1, 1]),
            IndexSpace::D2 { .. } => {
                let u = start..start + n;
                let mut g = Groups::none();
                for r in self.rects(&u) {
                    g.push(
                        [r.x.start as u32, r.y.start as u32, 0],
                        [(r.x.end - r.x.start) as u32, (r.y.end - r.y.start) as u32, 1],
                    );
                }
                g
            }
        }
    }
}

/// A package: a contiguous range of work-groups claimed by one device.
///
/// In 2-D it covers the items of `rows` x `cols`: whole rows (`cols` is
/// `0..width`), except for a kernel that takes tiles
/// ([`Kernel::with_tiles`]), whose packages may cover part of their rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    /// Units of the index space (work-groups in 1-D, rows of work-groups
    /// in 2-D, work-groups again in 2-D with tiles): the space's own, also
    /// in a run of a sub-range.
    pub units: Range<u64>,
    /// Work-items covered, in linear (row-major) order; clipped to the index
    /// space, so the final package may be a partial work-group. A tile
    /// (`cols` narrower than the rows) covers only `cols` of each row
    /// between: this is then its first item to one past its last.
    pub items: Range<u64>,
    /// 2-D only: rows of items covered.
    pub rows: Option<Range<u32>>,
    /// 2-D: columns of items covered in each of `rows` (`0..width` unless
    /// the kernel takes tiles); `0..0` in 1-D.
    pub cols: Range<u32>,
    /// 2-D only: items per row (0 in 1-D).
    pub width: u32,
}

impl Package {
    /// Number of work-items.
    pub fn len(&self) -> u64 {
        match &self.rows {
            Some(r) => u64::from(r.end - r.start) * u64::from(self.cols.end - self.cols.start),
            None => self.items.end - self.items.start,
        }
    }

    /// `true` when it covers no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `true` when it covers part of its rows' columns (a tile).
    pub fn is_tile(&self) -> bool {
        self.rows.is_some() && self.cols != (0..self.width)
    }

    /// The items covered, as contiguous linear ranges: one per row of a
    /// tile, else one.
    pub(crate) fn item_ranges(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        let w = u64::from(self.width);
        let (tile_rows, whole) = match (&self.rows, self.is_tile()) {
            (Some(r), true) => (r.clone(), None),
            _ => (0..0, Some(self.items.clone())),
        };
        let cols = u64::from(self.cols.start)..u64::from(self.cols.end);
        whole.into_iter().chain(
            tile_rows.map(move |y| u64::from(y) * w + cols.start..u64::from(y) * w + cols.end),
        )
    }
}

/// The CPU implementation of a kernel: called once per package with that
/// package and its view of the arguments.
pub type CpuFn = dyn Fn(&Package, &mut CpuArgs<'_>) + Send + Sync;

/// A kernel: a SPIR-V compute shader for GPUs and/or a Rust closure for CPU
/// workers, computing the same thing over the same index space.
///
/// # What a kernel learns
///
/// The scheduler learns each device's cost (per-package overhead and
/// work-groups per second) from the runs of *the same kernel*: this value
/// and its clones, which share what is learned. The figures are kept for
/// the index space of the last run; a run over another index space starts
/// again, from the profile on disk of that space's shape class where
/// profiles are on ([`EngineOptions::profiles`]). Two kernels built
/// separately learn separately within a process, but share profiles when
/// they have the same SPIR-V (a CPU-only kernel: the same name and
/// work-group size) on the same devices and drivers.
///
/// The figures assume the cost of a work-group depends on the kernel and
/// the index space only. Where it depends on the arguments too (a push
/// constant that sets an iteration count, data that decides the work),
/// build one kernel per such regime, or expect the first runs after a
/// change to be balanced from the old figures.
///
/// [`EngineOptions::profiles`]: crate::EngineOptions::profiles
#[derive(Clone)]
pub struct Kernel {
    pub(crate) name: String,
    pub(crate) local: [u32; 3],
    pub(crate) interface: Option<ShaderInterface>,
    pub(crate) pipeline: Option<Arc<ComputePipeline>>,
    pub(crate) cpu: Option<Arc<CpuFn>>,
    pub(crate) estimator: Arc<crate::sched::ThroughputEstimator>,
    /// What the estimator's figures are about, and what was saved of them.
    pub(crate) learned: Arc<std::sync::Mutex<Learned>>,
    /// Set once the engine's GPU completed a package of this kernel: the
    /// first one pays one-time costs and is recorded cold (see
    /// [`crate::sched::CostFit::record_cold`]).
    pub(crate) gpu_warm: Arc<std::sync::atomic::AtomicBool>,
    /// The pipeline and warm flag (as `gpu_warm`) on each of the engine's
    /// GPUs after the first (multi-device engines; see
    /// `crate::engine::pipeline_on`).
    pub(crate) other_gpus: Vec<(Arc<ComputePipeline>, Arc<std::sync::atomic::AtomicBool>)>,
    /// A stable identity for profiles: a hash of the SPIR-V, or of the
    /// name and work-group size for a CPU-only kernel.
    pub(crate) identity: u64,
    /// 2-D packages may cover part of their rows ([`Kernel::with_tiles`]).
    pub(crate) tiles: bool,
}

/// The index space a kernel's estimator has learned about, and its profile.
#[derive(Debug, Default)]
pub(crate) struct Learned {
    /// The space of the last run (a new one resets the estimator).
    pub(crate) space: Option<IndexSpace>,
    /// The profile of this space's shape class, when profiles are on.
    pub(crate) key: Option<crate::profile::ProfileKey>,
    /// Whether the figures started from a profile on disk.
    pub(crate) from_profile: bool,
    /// The figures last written to (or read from) the profile.
    pub(crate) saved: crate::profile::Profile,
    /// The measured time of each configuration run over this space.
    pub(crate) outcomes: crate::outcomes::Outcomes,
    /// How co-executed runs over this space ended: the scales of the
    /// devices' rates in the split.
    pub(crate) split: crate::split::SplitScale,
    /// The part of the items each device slot ran in the last co-executed
    /// run over this space (see [`crate::learn::MIN_COVERAGE`]).
    pub(crate) coverage: Vec<Option<f64>>,
    /// Runs of this kernel object over this space.
    pub(crate) runs: u64,
    /// Each estimator slot's lone GPU runs' times per package count (see
    /// [`crate::depth`]; empty until one ran).
    pub(crate) depth: Vec<crate::depth::DepthLadder>,
    /// The estimator slot of the GPU that ran the last run over this space
    /// alone (`None`: the last run was co-executed, or none ran yet).
    pub(crate) lone_before: Option<usize>,
    /// Per GPU estimator slot, the first package this process ran of the
    /// kernel on that GPU while it was cold: its units and seconds, its
    /// uploads left out (see [`crate::learn::Learning::profile_cold`]).
    pub(crate) cold: Vec<(usize, u64, f64)>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name)
            .field("local_size", &self.local)
            .field("gpu", &self.pipeline.is_some())
            .field("cpu", &self.cpu.is_some())
            .field("tiles", &self.tiles)
            .finish()
    }
}

impl Kernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Work-group size.
    pub fn local_size(&self) -> [u32; 3] {
        self.local
    }

    /// The SPIR-V interface, if the kernel has a GPU implementation.
    pub fn interface(&self) -> Option<&ShaderInterface> {
        self.interface.as_ref()
    }

    /// `true` when it has a GPU implementation.
    pub fn has_gpu(&self) -> bool {
        self.pipeline.is_some()
    }

    /// `true` when it has a CPU implementation.
    pub fn has_cpu(&self) -> bool {
        self.cpu.is_some()
    }

    /// The units of `space` for this kernel (what
    /// [`Engine::run_range`](crate::Engine::run_range) takes ranges of):
    /// its work-groups in 1-D, its rows of work-groups in 2-D (its
    /// work-groups, in row-major order, where it takes tiles);
    /// [`Error::EmptyRange`] for an empty space.
    pub fn units(&self, space: IndexSpace) -> Result<u64> {
        Geometry::new(space, self.local, self.tiles).map(|g| g.total)
    }

    /// Declares that the CPU closure handles 2-D packages that cover part
    /// of their rows: the columns [`Package::cols`] of each of
    /// [`Package::rows`], writing outputs through
    /// [`CpuArgs::output_rows`] (a tile's items are not contiguous, so
    /// [`CpuArgs::output`] refuses it). The scheduler's 2-D units are then
    /// single work-groups instead of rows of them.
    ///
    /// # Why
    /// A CPU worker runs a package on one core. In 2-D a row of
    /// work-groups spans the image's width: on a kernel where the GPU is
    /// far faster (a ray tracer, a large matrix product) one such row on
    /// one core can outlast the GPU's whole run, so a first run, before
    /// the devices' speeds are known, may wait for it. With tiles the CPU
    /// probes and claims single work-groups, and the GPU and the other
    /// workers take the unstarted tiles of a row a worker holds.
    ///
    /// It pays where a work-group costs a worker far more than a call
    /// (tens of microseconds and up: a fractal, a ray tracer, a matrix
    /// product). A bandwidth-bound stencil is better left in rows: a tile
    /// reads its rows in short strided pieces, a row in one stream.
    ///
    /// Call it before the kernel's first run: it changes what a unit is,
    /// so what was learned (and profiles) are kept apart from the untiled
    /// kernel's. It changes nothing in 1-D.
    pub fn with_tiles(mut self) -> Self {
        if !self.tiles {
            self.tiles = true;
            self.identity ^= 0x7469_6c65_735f_6f6e; // "tiles_on"
            self.estimator = Arc::new(crate::sched::ThroughputEstimator::new(
                self.estimator.devices(),
            ));
            self.learned = Arc::default();
        }
        self
    }

    /// Whether the kernel takes tiles ([`Kernel::with_tiles`]).
    pub fn takes_tiles(&self) -> bool {
        self.tiles
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write { per_item: u64 },
    /// A reduction's partials: `width` elements per work-group.
    Reduce { width: u64 },
}

pub(crate) struct ArgBuffer<'a> {
    pub(crate) raw: &'a RawBuffer,
    pub(crate) access: Access,
    pub(crate) type_id: TypeId,
    pub(crate) type_name: &'static str,
    pub(crate) len: usize,
    /// Bytes per element, checked against the shader's array stride:
    /// `size_of::<T>()` unless [`Args::element_size`] restated it.
    pub(crate) elem_size: usize,
    /// A reduction's identity, `width` elements as bytes (empty otherwise).
    pub(crate) identity: &'a [u8],
    /// What a package reads of it, where restated ([`Args::footprint`]).
    pub(crate) footprint: Option<Footprint>,
}

impl ArgBuffer<'_> {
    /// What a package reads of it: the declared footprint, or the default
    /// (inputs: the whole buffer; outputs: their own items).
    pub(crate) fn footprint(&self) -> Footprint {
        match (self.footprint, self.access) {
            (Some(f), _) => f,
            (None, Access::Read) => Footprint::Whole,
            (None, Access::Write { per_item }) => Footprint::Items { per_item },
            // Partials are sized by work-groups, not items (and refused
            // with staged memory, see `exec::reduce`).
            (None, Access::Reduce { .. }) => Footprint::Whole,
        }
    }
}

/// The arguments of a run: buffers in binding order (the i-th buffer added
/// is bound to the shader's i-th storage buffer, by increasing binding
/// number) and the push-constant bytes.
///
/// Inputs are borrowed shared and must be `readonly` in the shader; outputs
/// are borrowed exclusively, so no other code can touch them while the run is
/// in flight. An output has `per_item` elements for each work-item (item `i`
/// owns elements `i * per_item .. (i + 1) * per_item`), and a CPU package may
/// write only its own items' elements.
#[derive(Default)]
pub struct Args<'a> {
    pub(crate) buffers: Vec<ArgBuffer<'a>>,
    pub(crate) push: Vec<u8>,
    pub(crate) context: Option<&'a (dyn Any + Send + Sync)>,
    /// Reduction outputs, with their positions among the buffers; bound
    /// (moved into `buffers`) at run start.
    pub(crate) reductions: super::reduce::Targets<'a>,
    /// A deterministic reduction is bound: the CPU runs one work-group per
    /// call.
    pub(crate) per_group: bool,
}

impl<'a> Args<'a> {
    /// Whether a reduction is bound.
    pub(crate) fn has_reductions(&self) -> bool {
        self.buffers
            .iter()
            .any(|b| matches!(b.access, Access::Reduce { .. }))
    }

    /// No arguments.
    pub fn new() -> Self {
        Args::default()
    }

    /// Adds a buffer the kernel only reads.
    pub fn input<T: bytemuck::Pod>(mut self, b: &'a Buffer<T>) -> Self {
        self.buffers.push(arg(b, Access::Read));
        self
    }

    /// Adds a buffer the kernel writes, one element per work-item.
    pub fn output<T: bytemuck::Pod>(self, b: &'a mut Buffer<T>) -> Self {
        self.output_per_item(b, 1)
    }

    /// Adds a buffer the kernel writes, `per_item` elements per work-item.
    /// `per_item` must be at least 1: a run given 0 returns
    /// [`Error::ZeroPerItem`].
    pub fn output_per_item<T: bytemuck::Pod>(
        mut self,
        b: &'a mut Buffer<T>,
        per_item: usize,
    ) -> Self {
        self.buffers.push(arg(
            b,
            Access::Write {
                per_item: per_item as u64,
            },
        ));
        self
    }

    /// Restates the element size of the buffer added last, in bytes, for
    /// the check against the shader's array stride: for a buffer of bytes
    /// (`Buffer<u8>`) that holds elements of another type, as the C ABI's
    /// buffers do. Counts (lengths, `per_item`) stay in the buffer's own
    /// elements. Without a buffer, nothing changes.
    pub fn element_size(mut self, bytes: usize) -> Self {
        if let Some(b) = self.buffers.last_mut() {
            b.elem_size = bytes;
        }
        self
    }

    /// Declares which part of the buffer added last a package reads
    /// (see [`Footprint`]): a staged GPU package uploads only that part.
    /// Inputs read the whole buffer unless declared otherwise; an output's
    /// footprint is its own items (another one fails the run with
    /// [`Error::Footprint`]). Without a buffer, nothing changes.
    pub fn footprint(mut self, footprint: Footprint) -> Self {
        if let Some(b) = self.buffers.last_mut() {
            b.footprint = Some(footprint);
        }
        self
    }

    /// Sets the push constants (scalar arguments) to the bytes of `value`.
    pub fn push<P: bytemuck::Pod>(mut self, value: &P) -> Self {
        self.push = bytemuck::bytes_of(value).to_vec();
        self
    }

    /// Sets the push constants from raw bytes.
    pub fn push_bytes(mut self, bytes: &[u8]) -> Self {
        self.push = bytes.to_vec();
        self
    }

    /// Attaches data of this run for the CPU closure, which reads it back
    /// with [`CpuArgs::context`]: a way to hand a kernel built once
    /// per-run state (the C ABI passes its view of the run's buffers so).
    pub fn context(mut self, context: &'a (dyn Any + Send + Sync)) -> Self {
        self.context = Some(context);
        self
    }
}

fn arg<T: bytemuck::Pod>(b: &Buffer<T>, access: Access) -> ArgBuffer<'_> {
    ArgBuffer {
        raw: b.raw(),
        access,
        type_id: TypeId::of::<T>(),
        type_name: std::any::type_name::<T>(),
        len: b.len(),
        elem_size: std::mem::size_of::<T>(),
        identity: &[],
        footprint: None,
    }
}

/// A CPU kernel's view of the run's arguments for one package.
///
/// Inputs are whole slices. Each output can be taken once per package and
/// is exactly that package's part, so two packages never alias.
pub struct CpuArgs<'r> {
    pub(crate) buffers: &'r [ArgBuffer<'r>],
    pub(crate) push: &'r [u8],
    pub(crate) context: Option<&'r (dyn Any + Send + Sync)>,
    /// The call's package: its items, its rows and columns in 2-D, and
    /// its work-groups (its reductions' slots).
    pub(crate) pkg: Package,
    pub(crate) taken: u64,
    pub(crate) failure: Option<String>,
}

/// The rows of a 2-D package's part of an output
/// ([`CpuArgs::output_rows`]): for each of its rows `y`, `(y, elements)`,
/// the elements of its columns of that row.
pub struct OutputRows<'r, T> {
    base: *mut T,
    rows: Range<u32>,
    /// Elements from a row's start to the package's first column, and of
    /// the package's columns, per row; elements per row of the space.
    skip: usize,
    len: usize,
    stride: usize,
    _buffer: std::marker::PhantomData<&'r mut [T]>,
}

impl<'r, T> Iterator for OutputRows<'r, T> {
    type Item = (u32, &'r mut [T]);

    fn next(&mut self) -> Option<Self::Item> {
        let y = self.rows.next()?;
        let start = y as usize * self.stride + self.skip;
        // SAFETY: `output_rows` checked that every row's elements of the
        // package's columns lie inside the buffer; each row is yielded
        // once, and the rows' ranges are disjoint (they start `stride`
        // apart and hold `len <= stride` elements), so no two slices
        // alias. The package's items are no other package's (see
        // `output`), and the iterator borrows the buffer for `'r` as
        // `output` does.
        Some((y, unsafe { std::slice::from_raw_parts_mut(self.base.add(start), self.len) }))
    }
}

impl<'r> CpuArgs<'r> {
    /// Input `index` (the position in [`Args`]) as a slice of `T`.
    ///
    /// # Panics
    /// If `index` is not an input or `T` is not its element type; inside a
    /// run the panic becomes [`Error::KernelPanic`].
    pub fn input<T: bytemuck::Pod>(&self, index: usize) -> &'r [T] {
        let a = self.arg::<T>(index);
        assert!(
            a.access == Access::Read,
            "argument {index} is an output or a reduction; use CpuArgs::output or CpuArgs::accumulator"
        );
        // SAFETY: the buffer is borrowed shared by the run's `Args` for the
        // whole run, so nothing writes it (inputs must be readonly in the
        // shader, checked at run start); the type and length match it.
        unsafe { std::slice::from_raw_parts(a.raw.ptr() as *const T, a.len) }
    }

    /// This package's part of output `index` as a mutable slice of `T`:
    /// elements `items.start * per_item .. items.end * per_item`.
    ///
    /// # Panics
    /// If `index` is not an output, `T` is not its element type, or it was
    /// already taken for this package.
    pub fn output<T: bytemuck::Pod>(&mut self, index: usize) -> &'r mut [T] {
        let a = self.arg::<T>(index);
        let per_item = match a.access {
            Access::Write { per_item } => per_item,
            Access::Read => panic!("argument {index} is an input; use CpuArgs::input"),
            Access::Reduce { .. } => {
                panic!("argument {index} is a reduction; use CpuArgs::accumulator")
            }
        };
        assert!(
            !self.pkg.is_tile(),
            "output {index}: this package is a tile (part of its rows' columns); use CpuArgs::output_rows"
        );
        self.take(index);
        let start = (self.pkg.items.start * per_item) as usize;
        let end = (self.pkg.items.end * per_item) as usize;
        assert!(
            end <= a.len,
            "output {index} too small (checked at run start)"
        );
        // SAFETY: the run holds `&mut Buffer` for this output, so no code
        // outside the run touches it; within the run every package covers
        // distinct items (each unit is claimed exactly once), so this range is
        // disjoint from every other package's, and it is handed out once per
        // package (the `taken` mask). The range is inside the buffer (checked
        // at run start and asserted above) and T is its element type.
        unsafe { std::slice::from_raw_parts_mut((a.raw.ptr() as *mut T).add(start), end - start) }
    }

    /// This 2-D package's part of output `index`, row by row: for each of
    /// [`Package::rows`], the elements of the items of
    /// [`Package::cols`] (`per_item` elements each). Works for every 2-D
    /// package, tiles ([`Kernel::with_tiles`]) or whole rows.
    ///
    /// # Panics
    /// As [`output`](Self::output), and in 1-D.
    pub fn output_rows<T: bytemuck::Pod>(&mut self, index: usize) -> OutputRows<'r, T> {
        let a = self.arg::<T>(index);
        let Access::Write { per_item } = a.access else {
            panic!("argument {index} is not an output; use CpuArgs::input or CpuArgs::accumulator");
        };
        let rows = self
            .pkg
            .rows
            .clone()
            .expect("CpuArgs::output_rows is for 2-D packages; use CpuArgs::output");
        self.take(index);
        let (cols, per) = (&self.pkg.cols, per_item as usize);
        let stride = self.pkg.width as usize * per;
        let skip = cols.start as usize * per;
        let len = (cols.end - cols.start) as usize * per;
        if rows.end > rows.start {
            let end = (rows.end - 1) as usize * stride + skip + len;
            assert!(
                end <= a.len,
                "output {index} too small (checked at run start)"
            );
        }
        OutputRows {
            base: a.raw.ptr() as *mut T,
            rows,
            skip,
            len,
            stride,
            _buffer: std::marker::PhantomData,
        }
    }

    /// The push constants read as a `P`.
    ///
    /// # Panics
    /// If their size is not `size_of::<P>()`.
    pub fn push<P: bytemuck::Pod>(&self) -> P {
        bytemuck::pod_read_unaligned(self.push)
    }

    /// The raw push-constant bytes.
    pub fn push_bytes(&self) -> &'r [u8] {
        self.push
    }

    /// The run's context ([`Args::context`]); `None` when none was given.
    pub fn context(&self) -> Option<&'r (dyn Any + Send + Sync)> {
        self.context
    }

    /// Fails this call: once the closure returns, the run stops claiming
    /// work (calls already under way on other workers finish) and returns
    /// [`Error::KernelFailed`] with `message`. The first failure of a call
    /// is kept. Unlike a panic, nothing is printed.
    pub fn fail(&mut self, message: impl Into<String>) {
        if self.failure.is_none() {
            self.failure = Some(message.into());
        }
    }

    /// Marks output or reduction `index` taken for this package.
    ///
    /// # Panics
    /// If it was already taken.
    pub(crate) fn take(&mut self, index: usize) {
        assert!(index < 64, "at most 64 arguments");
        assert!(
            self.taken & (1 << index) == 0,
            "output {index} was already taken for this package"
        );
        self.taken |= 1 << index;
    }

    pub(crate) fn arg<T: bytemuck::Pod>(&self, index: usize) -> &'r ArgBuffer<'r> {
        let a = self.buffers.get(index).unwrap_or_else(|| {
            panic!(
                "argument {index} does not exist ({} given)",
                self.buffers.len()
            )
        });
        assert!(
            a.type_id == TypeId::of::<T>(),
            "argument {index} holds {} but was read as {}",
            a.type_name,
            std::any::type_name::<T>()
        );
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sub-range's run units map to the space's: packages name global
    /// units and items, dispatches their true base work-group.
    #[test]
    fn sub_range_geometry_maps_run_units_to_the_space() {
        let g = Geometry::sub_range(IndexSpace::D1(1000), [64, 1, 1], false, 10..16).unwrap();
        assert_eq!((g.total, g.first, g.units), (16, 10, 6));
        let p = g.package(0..6);
        assert_eq!((p.units, p.items), (10..16, 640..1000));
        assert_eq!(g.dispatch(&(2..4)).regions(), &[([12, 0, 0], [2, 1, 1])]);
        let space = IndexSpace::D2 {
            width: 30,
            height: 20,
        };
        let g = Geometry::sub_range(space, [8, 4, 1], false, 2..5).unwrap();
        assert_eq!((g.total, g.groups_x), (5, 4));
        let p = g.package(1..3);
        assert_eq!((p.units, p.rows, p.items), (3..5, Some(12..20), 360..600));
        assert_eq!(g.dispatch(&(1..3)).regions(), &[([0, 3, 0], [4, 2, 1])]);
        // The whole space is the sub-range of all its units.
        assert_eq!(
            Geometry::sub_range(space, [8, 4, 1], false, 0..5).unwrap(),
            Geometry::new(space, [8, 4, 1], false).unwrap()
        );
    }

    /// A tiled 2-D run's units are work-groups in row-major order: a
    /// package is up to three rectangles, dispatched as such, whose items
    /// are exactly the package's work-groups' (clipped to the space).
    #[test]
    fn tiled_packages_are_rectangles_of_work_groups() {
        let space = IndexSpace::D2 {
            width: 30,
            height: 10,
        };
        // Work-groups of 8x4: 4 per row of groups (the last 6 wide), 3
        // rows of groups (the last 2 high).
        let g = Geometry::new(space, [8, 4, 1], true).unwrap();
        assert_eq!((g.total, g.groups_x, g.groups_y(), g.groups_per_unit()), (12, 4, 3, 1));
        // Inside one row of groups: one tile.
        let p = g.package(1..3);
        assert_eq!((p.rows.clone(), p.cols.clone(), p.len()), (Some(0..4), 8..24, 64));
        assert!(p.is_tile());
        assert_eq!(p.item_ranges().collect::<Vec<_>>(), vec![8..24, 38..54, 68..84, 98..114]);
        assert_eq!(g.dispatch(&(1..3)).regions(), &[([1, 0, 0], [2, 1, 1])]);
        // The end of row 0, row 1 whole, the start of row 2.
        let pieces: Vec<Package> = g.pieces(2..9).collect();
        assert_eq!(pieces.len(), 3);
        assert_eq!((pieces[0].units.clone(), pieces[0].cols.clone()), (2..4, 16..30));
        assert_eq!((pieces[1].units.clone(), pieces[1].rows.clone()), (4..8, Some(4..8)));
        assert!(!pieces[1].is_tile());
        assert_eq!((pieces[2].units.clone(), pieces[2].rows.clone(), pieces[2].cols.clone()), (8..9, Some(8..10), 0..8));
        assert_eq!(g.items_in(2..9), 4 * 14 + 4 * 30 + 2 * 8);
        assert_eq!(
            g.dispatch(&(2..9)).regions(),
            &[([2, 0, 0], [2, 1, 1]), ([0, 1, 0], [4, 1, 1]), ([0, 2, 0], [1, 1, 1])]
        );
        // The package as a whole spans its rows (a superset, for reads).
        assert_eq!(g.package(2..9).items, 0..300);
        // Every item once over any split into packages.
        let mut seen = vec![0u8; 300];
        for r in [0..1, 1..5, 5..6, 6..11, 11..12] {
            for p in g.pieces(r) {
                for ir in p.item_ranges() {
                    for i in ir {
                        seen[i as usize] += 1;
                    }
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{seen:?}");
        // A sub-range of tiles names the space's units.
        let sub = Geometry::sub_range(space, [8, 4, 1], true, 3..6).unwrap();
        let p: Vec<Package> = sub.pieces(0..3).collect();
        assert_eq!((p[0].units.clone(), p[1].units.clone()), (3..4, 4..6));
        // 1-D ignores tiles.
        let g = Geometry::new(IndexSpace::D1(100), [16, 1, 1], true).unwrap();
        assert!(!g.tiles);
        assert_eq!(g.pieces(1..3).count(), 1);
    }

    #[test]
    fn bad_sub_ranges_are_typed_errors() {
        let sub = |r: Range<u64>| Geometry::sub_range(IndexSpace::D1(100), [64, 1, 1], false, r);
        for r in [1..1, Range { start: 2, end: 1 }, 0..3, 2..3] {
            assert!(
                matches!(sub(r.clone()), Err(Error::SubRange { units: 2, .. })),
                "{r:?}"
            );
        }
        assert!(matches!(
            Geometry::sub_range(IndexSpace::D1(0), [64, 1, 1], false, 0..1),
            Err(Error::EmptyRange)
        ));
    }
}
