! What the Fortran test's cases share: counting checks, efacoll's counters (read through its C
! API by mpi_fortran_c_helpers.c) to tell a call efacoll ran from one it passed to MPI, and GPU
! memory from the CUDA runtime where there is one.
module fortran_checks
  use iso_c_binding, only: c_int, c_long_long, c_ptr, c_size_t
  implicit none
  integer :: checks = 0, failures = 0
  ! efacoll runs host-buffer calls only with EFACOLL_HOST_BUFFERS=1 (set by the ctest runs);
  ! otherwise they pass to MPI, by design
  logical :: host_calls_run = .false.
  ! efacoll_collective's values
  integer(c_int), parameter :: k_allreduce = 0, k_allgather = 1, k_reduce_scatter = 2

  interface
    function engine_calls(coll) bind(C, name="efacoll_test_engine_calls")
      import :: c_int, c_long_long
      integer(c_int), value :: coll
      integer(c_long_long) :: engine_calls
    end function engine_calls
    function mpi_calls(coll) bind(C, name="efacoll_test_mpi_calls")
      import :: c_int, c_long_long
      integer(c_int), value :: coll
      integer(c_long_long) :: mpi_calls
    end function mpi_calls
    function stale_handles_caught() bind(C, name="efacoll_test_stale_handles_caught")
      import :: c_int
      integer(c_int) :: stale_handles_caught
    end function stale_handles_caught
    subroutine keep_c_copy(comm) bind(C, name="efacoll_test_keep_c_copy")
      import :: c_int
      integer(c_int), value :: comm
    end subroutine keep_c_copy
    ! MPI's error class; -1 when the receive buffer changed
    function allreduce_on_kept_copy() bind(C, name="efacoll_test_allreduce_on_kept_copy")
      import :: c_int
      integer(c_int) :: allreduce_on_kept_copy
    end function allreduce_on_kept_copy
    ! c_null_ptr where there is no GPU
    function device_copy(host, bytes) bind(C, name="efacoll_test_device_copy")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: host
      integer(c_size_t), value :: bytes
      type(c_ptr) :: device_copy
    end function device_copy
    function copy_to_host(host, device, bytes) bind(C, name="efacoll_test_copy_to_host")
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: host, device
      integer(c_size_t), value :: bytes
      integer(c_int) :: copy_to_host
    end function copy_to_host
    subroutine device_free(device) bind(C, name="efacoll_test_device_free")
      import :: c_ptr
      type(c_ptr), value :: device
    end subroutine device_free
  end interface

contains

  subroutine read_host_buffers_setting()
    character(len=8) :: value
    integer :: length, status
    call get_environment_variable('EFACOLL_HOST_BUFFERS', value, length, status)
    host_calls_run = status == 0 .and. value == '1'
  end subroutine read_host_buffers_setting

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    checks = checks + 1
    if (.not. ok) then
      failures = failures + 1
      print '(a,a)', 'FAIL ', what
    end if
  end subroutine expect

  ! The call just made was run by efacoll (ran) or passed to MPI (not ran): one more of that
  ! kind since `engine_before` / `mpi_before` were read.
  subroutine expect_route(coll, engine_before, mpi_before, ran, what)
    integer(c_int), intent(in) :: coll
    integer(c_long_long), intent(in) :: engine_before, mpi_before
    logical, intent(in) :: ran
    character(*), intent(in) :: what
    integer(c_long_long) :: engine_now, mpi_now
    engine_now = engine_calls(coll)
    mpi_now = mpi_calls(coll)
    if (ran) then
      call expect(engine_now == engine_before + 1 .and. mpi_now == mpi_before, &
                  what // ': not run by efacoll')
    else
      call expect(mpi_now == mpi_before + 1 .and. engine_now == engine_before, &
                  what // ': not passed to MPI')
    end if
  end subroutine expect_route

end module fortran_checks
