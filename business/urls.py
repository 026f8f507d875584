from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from business import agenda_views, views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="logged_out"), name="logout"),
    path("logged-out/", views.logged_out, name="logged_out"),
    path("jobs/", views.jobs, name="jobs"),
    path("jobs/board/", agenda_views.agenda, name="agenda"),
    path("jobs/<int:pk>/", views.job_detail, name="job_detail"),
    path("customers/", views.customers, name="customers"),
    path("customers/<int:pk>/", views.customer_detail, name="customer_detail"),
    path("customers/<int:pk>/profile/", views.customer_profile, name="customer_profile"),
    path(
        "customers/<int:pk>/profile/clear/",
        views.customer_profile_clear,
        name="customer_profile_clear",
    ),
    path("technicians/", views.technicians, name="technicians"),
    path("vehicles/", views.vehicles, name="vehicles"),
    path("invoices/", views.invoices, name="invoices"),
    path("invoices/<int:pk>/", views.invoice_detail, name="invoice_detail"),
    path("invoices/<int:pk>/pdf/", views.invoice_pdf, name="invoice_pdf"),
    path("quotes/", views.quotes, name="quotes"),
    path("quotes/<int:pk>/", views.quote_detail, name="quote_detail"),
    path("quotes/<int:pk>/pdf/", views.quote_pdf, name="quote_pdf"),
    path("tickets/", views.tickets, name="tickets"),
]
