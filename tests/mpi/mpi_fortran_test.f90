! Fortran codes calling the four collectives, under mpirun with efacoll preloaded: Open MPI's
! Fortran library calls PMPI_* itself, so only efacoll's own Fortran entry points bring these
! calls to it (mpi_shim/shim_fortran.cc). Prints "N passed, M failed" (checks, all ranks);
! exit 0 pass, 1 fail, 77 skipped (efacoll not loaded). Argument init_thread: MPI_Init_thread.
program mpi_fortran_test
  use mpi
  use fortran_checks
  implicit none
  integer :: ierr, rank, nranks, counts(2), totals(2), provided
  character(len=16) :: how
  ! "init_thread": start with MPI_Init_thread, which has Fortran entry points of its own
  call get_command_argument(1, how)
  if (how == 'init_thread') then
    call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
    call expect(ierr == MPI_SUCCESS .and. provided >= MPI_THREAD_FUNNELED, 'MPI_Init_thread')
  else
    call MPI_Init(ierr)
  end if
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  ! Every case checks which calls efacoll ran: without efacoll the run proves nothing.
  if (engine_calls(k_allreduce) < 0) then
    if (rank == 0) print '(a)', 'FAIL: efacoll is not loaded (no efacoll_get_counters)'
    call MPI_Finalize(ierr)
    stop 1
  end if
  call read_host_buffers_setting()
  call legacy_cases(rank, nranks)
  call f08_cases(rank, nranks)
  call gpu_cases(rank, nranks)
  ! Gathered through PMPI, outside efacoll.
  counts = [checks - failures, failures]
  call PMPI_Allreduce(counts, totals, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(i0,a,i0,a)', totals(1), ' passed, ', totals(2), ' failed'
  call MPI_Finalize(ierr)
  if (totals(2) /= 0) stop 1
end program mpi_fortran_test
