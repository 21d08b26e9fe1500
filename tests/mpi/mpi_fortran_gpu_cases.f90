! GPU buffers from Fortran (as OpenACC's host_data or CUDA Fortran hand them to MPI): device
! memory seen through a Fortran pointer, which Fortran never reads, passed to MPI_Allreduce
! through `use mpi`. efacoll must run it (the host MPI here is not CUDA-aware); the result,
! copied back, against a reference computed here. Skipped, saying so, without a GPU.
subroutine gpu_cases(rank, nranks)
  use mpi
  use fortran_checks
  use iso_c_binding
  implicit none
  integer, intent(in) :: rank, nranks
  integer, parameter :: n = 300000
  double precision, target, allocatable :: host(:)
  double precision, pointer, contiguous :: on_gpu(:)
  type(c_ptr) :: dev
  integer(c_long_long) :: e0, m0
  integer :: ierr, i, have, everyone
  integer(c_size_t) :: bytes

  allocate(host(n))
  do i = 1, n
    host(i) = dble(rank + 1) * mod(i, 4096)
  end do
  bytes = int(n, c_size_t) * 8
  dev = device_copy(c_loc(host), bytes)
  have = merge(1, 0, c_associated(dev))
  call PMPI_Allreduce(have, everyone, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  if (everyone == 0) then
    if (rank == 0) print '(a)', 'SKIP: no GPU on some rank: GPU buffers from Fortran not tried'
    if (c_associated(dev)) call device_free(dev)
    return
  end if
  call c_f_pointer(dev, on_gpu, [n])
  e0 = engine_calls(k_allreduce); m0 = mpi_calls(k_allreduce)
  call MPI_Allreduce(MPI_IN_PLACE, on_gpu, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS, 'use mpi: GPU allreduce double sum in place: error')
  call expect_route(k_allreduce, e0, m0, .true., 'use mpi: GPU allreduce double sum in place')
  host = -1d0
  call expect(copy_to_host(c_loc(host), dev, bytes) == 0, 'use mpi: GPU result copied back')
  call expect(all(host == [(dble(nranks * (nranks + 1) / 2) * mod(i, 4096), i = 1, n)]), &
              'use mpi: GPU allreduce double sum in place')
  call device_free(dev)
  deallocate(host)
end subroutine gpu_cases
