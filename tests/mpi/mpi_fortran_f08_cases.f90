! The collectives called through `use mpi_f08` (Open MPI routes them through its ompi_*_f
! functions, which efacoll defines): results against references computed here, routes from
! efacoll's counters, and the optional ierror left out.
subroutine f08_cases(rank, nranks)
  use mpi_f08
  use fortran_checks
  implicit none
  integer, intent(in) :: rank, nranks
  integer, parameter :: n = 513, m = 5
  double precision :: d(n)
  integer(kind=8) :: big(n), big_out(n)
  real :: gathered(m * nranks), mine(m), r_in(m * nranks), r_out(m)
  integer(c_long_long) :: e0, m0
  type(MPI_Comm) :: dup
  integer :: ierr, i

  ! MPI_DOUBLE_PRECISION, MPI_SUM, in place
  do i = 1, n
    d(i) = dble(rank + 1) * i
  end do
  e0 = engine_calls(k_allreduce); m0 = mpi_calls(k_allreduce)
  call MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. &
              all(d == [(dble(nranks * (nranks + 1) / 2) * i, i = 1, n)]), &
              'use mpi_f08: allreduce double sum in place')
  call expect_route(k_allreduce, e0, m0, host_calls_run, &
                    'use mpi_f08: allreduce double sum in place')

  ! MPI_INTEGER8, MPI_MAX, without ierror: values past 32 bits
  do i = 1, n
    big(i) = int(rank, 8) * 2_8**40 + i
  end do
  e0 = engine_calls(k_allreduce); m0 = mpi_calls(k_allreduce)
  call MPI_Allreduce(big, big_out, n, MPI_INTEGER8, MPI_MAX, MPI_COMM_WORLD)
  call expect(all(big_out == [(int(nranks - 1, 8) * 2_8**40 + i, i = 1, n)]), &
              'use mpi_f08: allreduce integer8 max')
  call expect_route(k_allreduce, e0, m0, host_calls_run, 'use mpi_f08: allreduce integer8 max')

  ! MPI_Allgather of MPI_REAL
  do i = 1, m
    mine(i) = real(rank * m + i)
  end do
  e0 = engine_calls(k_allgather); m0 = mpi_calls(k_allgather)
  call MPI_Allgather(mine, m, MPI_REAL, gathered, m, MPI_REAL, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(gathered == [(real(i), i = 1, m * nranks)]), &
              'use mpi_f08: allgather real')
  call expect_route(k_allgather, e0, m0, host_calls_run, 'use mpi_f08: allgather real')

  ! MPI_Reduce_scatter_block of MPI_REAL, MPI_SUM
  do i = 1, m * nranks
    r_in(i) = real(i * (rank + 1))
  end do
  e0 = engine_calls(k_reduce_scatter); m0 = mpi_calls(k_reduce_scatter)
  call MPI_Reduce_scatter_block(r_in, r_out, m, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. &
              all(r_out == [(real((rank * m + i) * (nranks * (nranks + 1) / 2)), i = 1, m)]), &
              'use mpi_f08: reduce_scatter_block real sum')
  call expect_route(k_reduce_scatter, e0, m0, host_calls_run, &
                    'use mpi_f08: reduce_scatter_block real sum')

  ! MPI_Comm_free while C code keeps a copy of the handle: that copy is then stale
  if (stale_handles_caught() == 1) then
    call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
    call keep_c_copy(dup%MPI_VAL)
    call MPI_Comm_free(dup, ierr)
    call expect(ierr == MPI_SUCCESS .and. dup == MPI_COMM_NULL, 'use mpi_f08: MPI_Comm_free')
    call expect(allreduce_on_kept_copy() == MPI_ERR_COMM, &
                'use mpi_f08: C copy of a handle MPI_Comm_free released')
  end if
end subroutine f08_cases
