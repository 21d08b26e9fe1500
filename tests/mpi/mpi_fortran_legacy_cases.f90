! The four collectives called through `use mpi` (the same symbols as mpif.h), with Fortran's own
! types: each result against a reference computed here, each call's route from efacoll's
! counters, and bad input through MPI_ERRORS_RETURN with the class the standard names.
subroutine legacy_cases(rank, nranks)
  use mpi
  use fortran_checks
  implicit none
  integer, intent(in) :: rank, nranks
  integer, parameter :: n = 1000, m = 7
  double precision :: d_in(n), d_out(n), d_want(n)
  real :: r(n), r_in(m * nranks), r_out(m)
  integer :: i_in(n), i_out(n), i_want(n), gathered(m * nranks), mine(m), counts(nranks)
  double complex :: z_in(n), z_out(n)
  logical :: l_in(n), l_out(n)
  double precision, allocatable :: rs_in(:), rs_out(:)
  integer(c_long_long) :: e0, m0
  integer :: ierr, i, j, cls, comm, offset, freed, stale, world_handler

  ! MPI_DOUBLE_PRECISION, MPI_SUM
  do i = 1, n
    d_in(i) = dble(rank + 1) * i
    d_want(i) = dble(nranks * (nranks + 1) / 2) * i
  end do
  e0 = engine_calls(k_allreduce); m0 = mpi_calls(k_allreduce)
  call MPI_Allreduce(d_in, d_out, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(d_out == d_want), 'use mpi: allreduce double sum')
  call expect_route(k_allreduce, e0, m0, host_calls_run, 'use mpi: allreduce double sum')

  ! MPI_REAL, MPI_MAX, in place
  do i = 1, n
    r(i) = real(rank * 1000 + i)
  end do
  e0 = engine_calls(k_allreduce); m0 = mpi_calls(k_allreduce)
  call MPI_Allreduce(MPI_IN_PLACE, r, n, MPI_REAL, MPI_MAX, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(r == [(real((nranks - 1) * 1000 + i), i = 1, n)]), &
              'use mpi: allreduce real max in place')
  call expect_route(k_allreduce, e0, m0, host_calls_run, 'use mpi: allreduce real max in place')

  ! MPI_INTEGER, MPI_BAND: every rank adds its own high bit to the same low bits
  do i = 1, n
    i_in(i) = ior(i, ishft(1, 20 + rank))
    i_want(i) = ior(i, ishft(1, 20))
    do j = 1, nranks - 1
      i_want(i) = iand(i_want(i), ior(i, ishft(1, 20 + j)))
    end do
  end do
  e0 = engine_calls(k_allreduce); m0 = mpi_calls(k_allreduce)
  call MPI_Allreduce(i_in, i_out, n, MPI_INTEGER, MPI_BAND, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(i_out == i_want), 'use mpi: allreduce band')
  call expect_route(k_allreduce, e0, m0, host_calls_run, 'use mpi: allreduce integer band')

  ! MPI_DOUBLE_COMPLEX, MPI_SUM
  do i = 1, n
    z_in(i) = dcmplx(dble(rank + 1), dble(i))
  end do
  e0 = engine_calls(k_allreduce); m0 = mpi_calls(k_allreduce)
  call MPI_Allreduce(z_in, z_out, n, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. &
              all(z_out == [(dcmplx(dble(nranks * (nranks + 1) / 2), dble(nranks * i)), &
                             i = 1, n)]), &
              'use mpi: allreduce double complex sum')
  call expect_route(k_allreduce, e0, m0, host_calls_run, 'use mpi: allreduce double complex sum')

  ! MPI_LOGICAL, MPI_LAND: LOGICAL's true value is the compiler's, so MPI reduces it
  do i = 1, n
    l_in(i) = mod(i, 2) == 0 .or. rank == 0
  end do
  e0 = engine_calls(k_allreduce); m0 = mpi_calls(k_allreduce)
  call MPI_Allreduce(l_in, l_out, n, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(l_out .eqv. [(mod(i, 2) == 0 .or. nranks == 1, &
              i = 1, n)]), 'use mpi: allreduce logical land')
  call expect_route(k_allreduce, e0, m0, .false., 'use mpi: allreduce logical land')

  ! MPI_Allgather of MPI_INTEGER, then in place
  do j = 1, m
    mine(j) = rank * m + j
  end do
  gathered = -1
  e0 = engine_calls(k_allgather); m0 = mpi_calls(k_allgather)
  call MPI_Allgather(mine, m, MPI_INTEGER, gathered, m, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(gathered == [(j, j = 1, m * nranks)]), &
              'use mpi: allgather integer')
  call expect_route(k_allgather, e0, m0, host_calls_run, 'use mpi: allgather integer')
  gathered = -1
  gathered(rank * m + 1:rank * m + m) = mine
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, m, MPI_INTEGER, &
                     MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(gathered == [(j, j = 1, m * nranks)]), &
              'use mpi: allgather integer in place')

  ! MPI_Reduce_scatter of MPI_DOUBLE_PRECISION: rank r gets r + 1 elements
  counts = [(j, j = 1, nranks)]
  allocate(rs_in(sum(counts)), rs_out(rank + 1))
  do i = 1, size(rs_in)
    rs_in(i) = dble(rank + 1) * i
  end do
  offset = rank * (rank + 1) / 2
  e0 = engine_calls(k_reduce_scatter); m0 = mpi_calls(k_reduce_scatter)
  call MPI_Reduce_scatter(rs_in, rs_out, counts, MPI_DOUBLE_PRECISION, MPI_SUM, &
                          MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. &
              all(rs_out == [(dble(nranks * (nranks + 1) / 2) * (offset + i), i = 1, rank + 1)]), &
              'use mpi: reduce_scatter double sum')
  call expect_route(k_reduce_scatter, e0, m0, host_calls_run, 'use mpi: reduce_scatter double sum')

  ! MPI_Reduce_scatter_block of MPI_REAL, MPI_MIN
  do i = 1, m * nranks
    r_in(i) = real(i + rank)
  end do
  e0 = engine_calls(k_reduce_scatter); m0 = mpi_calls(k_reduce_scatter)
  call MPI_Reduce_scatter_block(r_in, r_out, m, MPI_REAL, MPI_MIN, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(r_out == [(real(rank * m + i), i = 1, m)]), &
              'use mpi: reduce_scatter_block real min')
  call expect_route(k_reduce_scatter, e0, m0, host_calls_run, &
                    'use mpi: reduce_scatter_block real min')

  ! Bad input: the class the standard names, through the communicator's handler, buffers kept
  call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
  call MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN, ierr)
  d_out = -7d0
  call MPI_Allreduce(d_in, d_out, -1, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  cls = MPI_SUCCESS
  if (ierr /= MPI_SUCCESS) call MPI_Error_class(ierr, cls, i)
  call expect(cls == MPI_ERR_COUNT .and. all(d_out == -7d0), 'use mpi: negative count')
  call MPI_Allreduce(d_in, d_out, n, MPI_DOUBLE_PRECISION, MPI_OP_NULL, comm, ierr)
  cls = MPI_SUCCESS
  if (ierr /= MPI_SUCCESS) call MPI_Error_class(ierr, cls, i)
  call expect(cls == MPI_ERR_OP .and. all(d_out == -7d0), 'use mpi: MPI_OP_NULL')
  ! A copy of a freed communicator's handle: MPI_ERR_COMM, raised on MPI_COMM_WORLD (it has no
  ! handler of its own)
  if (stale_handles_caught() == 1) then
    call MPI_Comm_dup(MPI_COMM_WORLD, freed, ierr)
    stale = freed
    call MPI_Comm_free(freed, ierr)
    call MPI_Comm_get_errhandler(MPI_COMM_WORLD, world_handler, ierr)
    call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    call MPI_Allreduce(d_in, d_out, n, MPI_DOUBLE_PRECISION, MPI_SUM, stale, ierr)
    cls = MPI_SUCCESS
    if (ierr /= MPI_SUCCESS) call MPI_Error_class(ierr, cls, i)
    call expect(cls == MPI_ERR_COMM .and. all(d_out == -7d0), 'use mpi: stale communicator handle')
    call MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_handler, ierr)
    call MPI_Errhandler_free(world_handler, ierr)
    ! freed here, through MPI_COMM_FREE, while C code keeps a copy of the handle
    call MPI_Comm_dup(MPI_COMM_WORLD, freed, ierr)
    call keep_c_copy(freed)
    call MPI_Comm_free(freed, ierr)
    call expect(ierr == MPI_SUCCESS .and. freed == MPI_COMM_NULL, 'use mpi: MPI_COMM_FREE')
    call expect(allreduce_on_kept_copy() == MPI_ERR_COMM, &
                'use mpi: C copy of a handle MPI_COMM_FREE released')
  end if
  ! and the next valid call on that communicator works
  call MPI_Allreduce(d_in, d_out, n, MPI_DOUBLE_PRECISION, MPI_SUM, comm, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(d_out == d_want), 'use mpi: call after errors')
  call MPI_Comm_free(comm, ierr)
  deallocate(rs_in, rs_out)
end subroutine legacy_cases
